"""current/ follows the branch: two minutes of a colleague pushing a line to theirs.txt every
second while this mount appends to mine.txt every 1.5 s (a new file every 10th time),
`sync_timeout=1,fetch_timeout=1,idle_fetch_timeout=1`, someone reading theirs.txt through
the mount now and then, and the clone tidied just after the writers stop (its check falls
two minutes after mount). Many of the mount's pushes are its commits replayed on the
colleague's newest line. 15 s after the writers stop, before unmount, current/theirs.txt
read through the mount, and the clone's working file, equal the remote's tip: a file left
one commit behind would have the next edit push the colleague's line away.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from helpers import git

SECONDS = 115  # the housekeeper's check at two minutes comes just after the writers stop
SETTLE = 15


@pytest.mark.stress
def test_current_shows_the_remote_s_tip_after_minutes_of_replayed_pushes(remote, mount_gitfs):
    remote.commit({"theirs.txt": ""}, "the colleague's file")
    mount = mount_gitfs(remote, sync_timeout=1, fetch_timeout=1, idle_fetch_timeout=1, log_level="info")
    stop = threading.Event()
    failures: list[str] = []

    def colleague() -> None:
        number = 0
        while not stop.wait(1.0):
            git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
            with open(remote.work / "theirs.txt", "a") as handle:
                handle.write(f"line {number}\n")
            git("commit", "-q", "-am", f"line {number}", cwd=remote.work)
            while not stop.is_set():  # lost the race with the mount's push: pull, push again
                if subprocess.run(["git", "push", "-q", "origin", remote.branch], cwd=remote.work,
                                  capture_output=True).returncode == 0:
                    break
                git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
            number += 1

    def writer() -> None:
        number = 0
        while not stop.wait(1.5):
            try:
                with open(mount.current / "mine.txt", "a") as handle:
                    handle.write(f"mine {number}\n")
                if number % 10 == 0:
                    (mount.current / f"file{number}.txt").write_text(f"{number}\n")
            except OSError as error:
                failures.append(str(error))
            number += 1

    def reader() -> None:  # the kernel holds theirs.txt's attributes and pages all along
        while not stop.wait(1.0):
            try:
                (mount.current / "theirs.txt").read_bytes()
            except OSError as error:
                failures.append(str(error))

    workers = [threading.Thread(target=work) for work in (colleague, writer, reader)]
    for worker in workers:
        worker.start()
    try:
        time.sleep(SECONDS)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)
    time.sleep(SETTLE)  # the scenario: a look at current/ a while after everyone stopped

    assert not failures, failures[:3]
    tip = remote.show("theirs.txt", remote.branch)
    assert tip.count(b"\n") >= SECONDS // 3
    assert (mount.current / "theirs.txt").read_bytes() == tip
    assert (mount.repo_path / "theirs.txt").read_bytes() == tip
    assert git("rev-parse", "HEAD", cwd=mount.repo_path).strip() == remote.head()
    assert "clone tidied" in mount.log_text()
    assert mount.stop() == 0
