"""Three mounts of one remote appending lines to one file without pauses (every 0.1-0.5 s,
each line opened, appended and closed as a logger does), while every mount commits,
merges and pushes between appends (sync_timeout below the pauses) and in the middle of
them (max_sync_delay=1). At the end every line
of every writer is on the remote exactly once, each writer's lines in its order, and every
mount shows what the remote has."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from helpers import wait_for

SECONDS = int(os.environ.get("GITFS_APPENDERS_SECONDS", "90"))
MOUNTS = 3


@pytest.mark.stress
def test_three_mounts_appending_to_one_file_keep_every_line_once_in_order(remote, mount_gitfs):
    remote.commit({"log.csv": "start\n"}, "the shared log")
    mounts = [mount_gitfs(remote, sync_timeout=0.2, max_sync_delay=1, fetch_timeout=0.5, idle_fetch_timeout=0.5)
              for _ in range(MOUNTS)]
    stop = threading.Event()
    written: list[list[str]] = [[] for _ in mounts]
    failures: list[str] = []

    def writer(number: int) -> None:
        pace = random.Random(number)
        path = mounts[number].current / "log.csv"
        while not stop.wait(pace.uniform(0.1, 0.5)):
            line = f"mount {number} line {len(written[number])}"
            try:
                with open(path, "a") as handle:
                    handle.write(line + "\n")
            except OSError as error:
                failures.append(f"{line}: {error}")
                continue
            written[number].append(line)

    workers = [threading.Thread(target=writer, args=(number,)) for number in range(MOUNTS)]
    for worker in workers:
        worker.start()
    time.sleep(SECONDS)
    stop.set()
    for worker in workers:
        worker.join(timeout=60)
    assert not failures, failures[:3]

    expected = sum(len(lines) for lines in written) + 1

    def settled() -> bool:
        text = remote.show("log.csv").decode()
        return text.count("\n") >= expected and all(
            (mount.current / "log.csv").read_text() == text for mount in mounts)

    try:
        wait_for(settled, timeout=120, message="every mount's lines on the remote and in every mount")
    finally:
        lines = remote.show("log.csv").decode().splitlines()
        wanted = {line for mine in written for line in mine} | {"start"}
        print(f"remote: {len(lines)} lines, {len(set(lines))} distinct, expected {expected}; missing "
              f"{sorted(wanted - set(lines))[:10]}; unexpected {sorted(set(lines) - wanted)[:10]}; doubled "
              f"{sorted({line for line in lines if lines.count(line) > 1})[:10]}")
        for mount in mounts:
            shown = (mount.current / "log.csv").read_text().splitlines()
            print(f"{mount.path.name}: {len(shown)} lines; differs from the remote at "
                  f"{next((i for i, (a, b) in enumerate(zip(shown, lines)) if a != b), None)}")
    assert lines[0] == "start" and len(lines) == expected, (len(lines), expected)
    for number, mine in enumerate(written):
        assert [line for line in lines if line.startswith(f"mount {number} ")] == mine
    for mount in mounts:  # nobody rewrote the branch, nobody refused: every push was a plain one
        assert "was rewritten" not in mount.log_text() and "refused by the server" not in mount.log_text()
        assert mount.stop() == 0
