"""A short soak: two minutes of a colleague pushing with git every second and a program
appending a line through the mount every second, `sync_timeout=1,fetch_timeout=1`,
under the 1,024 open files of a systemd service, on a clone that arrives with 60 packs
(past git's threshold, short of the busy mount's). Every fetch adds a pack: before open
packs were bounded and the clone tidied, open files grew by one a fetch. Afterwards:
every line of both sides where it belongs, open files and threads flat, the clone tidied
while busy, the log clean (the fixture's check). `make bench` runs the same for 10 minutes
and reports the growth per hour of each figure.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from aging import age_clone_quickly, open_files, pack_count
from gitfs.repo.tidying.housekeeping import AUTO_PACK_LIMIT, BUSY_FACTOR
from helpers import git, wait_for

SECONDS = 120
OPEN_FILES = 1024
BOUND = 256


def thread_count(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


@pytest.mark.stress
def test_two_minutes_of_pushes_and_appends_keep_every_line_and_the_daemon_flat(remote, mount_gitfs):
    remote.commit({"colleague.txt": ""}, "the colleague's file")
    first = mount_gitfs(remote)
    assert first.stop() == 0
    age_clone_quickly(remote.bare, first.repo_path, AUTO_PACK_LIMIT + 10)
    git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work)
    mount = mount_gitfs(remote, repo_path=first.repo_path, open_files=OPEN_FILES, sync_timeout=1,
                        fetch_timeout=1, log_level="info")
    pid = mount.process.pid
    stop = threading.Event()
    pushed: list[int] = []
    written: list[int] = []
    failures: list[str] = []

    def colleague() -> None:
        while not stop.wait(1.0):
            number = len(pushed)
            with open(remote.work / "colleague.txt", "a") as handle:
                handle.write(f"colleague line {number}\n")
            git("commit", "-q", "-am", f"line {number}", cwd=remote.work)
            while not stop.is_set():  # a push that lost the race with the mount's: pull, push again
                git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
                if subprocess.run(["git", "push", "-q", "origin", remote.branch], cwd=remote.work,
                                  capture_output=True).returncode == 0:
                    pushed.append(number)
                    break

    def writer() -> None:
        while not stop.wait(1.0):
            try:
                with open(mount.current / "notes.txt", "a") as handle:
                    handle.write(f"mount line {len(written)}\n")
                written.append(len(written))
            except OSError as error:
                failures.append(str(error))

    samples: list[tuple[float, int, int, int]] = []  # (seconds in, open files, threads, packs)
    workers = [threading.Thread(target=colleague), threading.Thread(target=writer)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    try:
        while time.monotonic() - started < SECONDS:
            time.sleep(2)
            samples.append((time.monotonic() - started, open_files(pid), thread_count(pid),
                            pack_count(mount.repo_path)))
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)

    assert not failures, failures[:3]
    mine = "".join(f"mount line {number}\n" for number in range(len(written)))
    theirs = "".join(f"colleague line {number}\n" for number in range(len(pushed)))
    wait_for(lambda: remote.show("notes.txt", remote.branch) == mine.encode(), timeout=120,
             message="every line written through the mount on the remote")
    wait_for(lambda: (mount.current / "colleague.txt").read_text() == theirs, timeout=120,
             message="every line the colleague pushed in current/")
    assert len(written) >= SECONDS // 2 and len(pushed) >= SECONDS // 4
    # Open files and threads a minute in beside the last minute's: not one more per fetch
    # (what an idle moment lets go comes back with the next read, hence the highest of each).
    early = [sample for sample in samples if 30 <= sample[0] < 60]
    late = [sample for sample in samples if sample[0] >= SECONDS - 30]
    assert max(sample[1] for sample in samples) <= BOUND
    assert max(sample[1] for sample in late) <= max(sample[1] for sample in early) + 8, samples
    assert max(sample[2] for sample in late) <= max(sample[2] for sample in early) + 2, samples
    assert "clone tidied" in mount.log_text()  # busy all along, past twice the thresholds
    assert max(sample[3] for sample in samples) <= BUSY_FACTOR * AUTO_PACK_LIMIT + 70, samples
    assert mount.stop() == 0
