"""Layer 3: a team on one remote. Several mounts (kernel caching as shipped) append their
own lines to two shared files and rewrite their own paragraph of a shared document, all
at once, each syncing every second. Once everything has settled, every mount's current/
shows the remote's tip, every line written is in the remote's file exactly once (in the
order its writer wrote them), every paragraph holds its last writer's text, and no file
has conflict markers or lost a change to "accept mine".

`make test` runs a short version; `make test-stress` runs a longer one with more mounts.
"""

from __future__ import annotations

import collections
import json
import os
import random
import threading
import time

import pytest

from helpers import wait_for

SHARED = ("team.txt", "changelog.md")
DOCUMENT = "document.md"
PARAGRAPH_LINES = 3


def heading(number: int) -> str:
    return f"## part {number:02d}\n\n"


def paragraph(number: int, revision: int) -> str:
    """A writer's paragraph; every revision has the same length, so a writer rewrites it in place."""
    return "".join(f"mount {number:02d} revision {revision:06d} line {line}\n"
                   for line in range(1, PARAGRAPH_LINES + 1))


def document(revisions: list[int]) -> str:
    return "# Shared document\n\n" + "\n".join(heading(n) + paragraph(n, r) for n, r in enumerate(revisions))


class Writer:
    """One person at one mount: appends with open/write/close as a shell's `>>` does, and
    rewrites their paragraph with pwrite, as an editor that saves in place would."""

    def __init__(self, number: int, mount, seed: int):
        self.number = number
        self.mount = mount
        self.random = random.Random(seed)
        self.written: dict[str, list[str]] = {name: [] for name in SHARED}
        self.revision = 0
        self.errors: list[str] = []

    def run(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        step = 0
        try:
            while time.monotonic() < deadline:
                step += 1
                self.append("team.txt", f"mount {self.number:02d} wrote line {step}\n")
                if step % 2 == 0:
                    self.append("changelog.md", f"- mount {self.number:02d}: change {step}\n")
                if step % 3 == 0:
                    self.rewrite_paragraph()
                time.sleep(self.random.uniform(0.2, 0.6))  # a person's pace between two saves
        except OSError as error:
            self.errors.append(f"mount {self.number}: {error}")

    def append(self, name: str, line: str) -> None:
        with open(self.mount.current / name, "a") as handle:
            handle.write(line)
        self.written[name].append(line)

    def rewrite_paragraph(self) -> None:
        self.revision += 1
        # Where this writer's paragraph starts: the parts before it, the newline that joins, its heading.
        offset = len(document([0] * self.number)) + (1 if self.number else 0) + len(heading(self.number))
        descriptor = os.open(self.mount.current / DOCUMENT, os.O_WRONLY)
        try:
            os.pwrite(descriptor, paragraph(self.number, self.revision).encode(), offset)
        finally:
            os.close(descriptor)


def run_team(remote, mount_gitfs, *, mounts: int, seconds: float) -> None:
    remote.commit({"team.txt": "# Who wrote what\n", "changelog.md": "# Changelog\n",
                   DOCUMENT: document([0] * mounts)}, "the team's files")
    team = [mount_gitfs(remote, sync_timeout=1, fetch_timeout=1) for _ in range(mounts)]
    for mount in team:
        wait_for(lambda mount=mount: (mount.current / DOCUMENT).exists(), message="the shared files")
    writers = [Writer(number, mount, seed=number) for number, mount in enumerate(team)]
    threads = [threading.Thread(target=writer.run, args=(seconds,)) for writer in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    last_write = time.monotonic()
    assert [error for writer in writers for error in writer.errors] == []

    def settled() -> bool:
        for mount in team:
            status = json.loads((mount.path / ".gitfs" / "status").read_text())
            if status["pending"]["changes_not_committed"] or status["pending"]["commits_not_pushed"]:
                return False
        return all((mount.current / name).read_bytes() == remote.show(name)
                   for mount in team for name in (*SHARED, DOCUMENT))

    wait_for(settled, timeout=120, interval=0.5, message="every mount to show the remote's tip, nothing pending")
    converged = time.monotonic() - last_write
    written = sum(len(lines) for writer in writers for lines in writer.written.values())
    for name in SHARED:
        content = remote.show(name).decode()
        assert "<<<<<<<" not in content and ">>>>>>>" not in content
        counts = collections.Counter(content.splitlines(keepends=True))
        for writer in writers:
            lines = writer.written[name]
            assert [line for line in lines if counts[line] != 1] == [], f"{name}: lines not there exactly once"
            positions = [content.index(line) for line in lines]
            assert positions == sorted(positions), f"{name}: mount {writer.number}'s lines out of order"
    assert remote.show(DOCUMENT) == document([writer.revision for writer in writers]).encode()
    for mount in team:
        assert "conflicts resolved" not in mount.log_text(), mount.log_text()
    print(f"\n{mounts} mounts, {seconds:.0f} s: {written} lines written, all kept; "
          f"{sum(w.revision for w in writers)} paragraph rewrites; settled {converged:.1f} s after the last write")


def test_a_team_of_three_appends_and_edits_one_document(remote, mount_gitfs):
    run_team(remote, mount_gitfs, mounts=3, seconds=15)


@pytest.mark.stress
def test_a_team_of_five_for_a_minute(remote, mount_gitfs):
    run_team(remote, mount_gitfs, mounts=5, seconds=60)
