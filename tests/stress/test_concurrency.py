"""Concurrency: 8 threads write, rename and read their own and shared files while
GitFS commits, fetches and pushes every fraction of a second and another clone
pushes every second. Afterwards: no unexpected errno, the daemon alive, every
final content on the remote, and no FUSE call ever took longer than WATCHDOG s.
"""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from helpers import git, remote_tree, wait_synced

THREADS = 8
OWN_FILES = 4
SHARED_FILES = 3
WATCHDOG = 10.0  # seconds one call may take on a loaded machine before it counts as a hang


class Calls:
    """Times every file-system call of the workers; the watchdog reads the clock."""

    def __init__(self):
        self.running: dict[int, tuple[str, float]] = {}
        self.slowest = (0.0, "")
        self.count = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, what: str, function, *args):
        me = threading.get_ident()
        started = time.monotonic()
        self.running[me] = (what, started)
        try:
            return function(*args)
        except OSError as error:
            with self.lock:
                self.errors.append(f"{what}: {error}")
            raise
        finally:
            del self.running[me]
            took = time.monotonic() - started
            with self.lock:
                self.count += 1
                if took > self.slowest[0]:
                    self.slowest = (took, what)

    def hung(self) -> list[str]:
        now = time.monotonic()
        return [f"{what} for {now - since:.1f} s" for what, since in list(self.running.values())
                if now - since > WATCHDOG]


def write_file(path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def read_file(path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def hammer(mount, remote, duration: float):
    root = mount.current
    calls = Calls()
    stop = threading.Event()
    go = threading.Event()
    go.set()
    final: dict[str, bytes] = {}  # path -> the last content written
    shared_locks = [threading.Lock() for _ in range(SHARED_FILES)]
    for number in range(THREADS):
        (root / f"t{number}").mkdir()
    (root / "shared").mkdir()
    for index in range(SHARED_FILES):
        write_file(root / f"shared/s{index}", b"start\n")
        final[f"shared/s{index}"] = b"start\n"

    def worker(number: int):
        rng = random.Random(number)
        serial = 0
        while not stop.is_set():
            go.wait()
            serial += 1
            data = f"thread {number} write {serial}\n".encode() * rng.randrange(1, 50)
            choice = rng.random()
            try:
                if choice < 0.35:  # own file, in place
                    name = f"t{number}/f{rng.randrange(OWN_FILES)}"
                    calls(f"write {name}", write_file, root / name, data)
                    final[name] = data
                elif choice < 0.55:  # own file, editor style: temp file renamed over it
                    name = f"t{number}/f{rng.randrange(OWN_FILES)}"
                    temporary = root / f"t{number}/.tmp{serial}"
                    calls(f"write {temporary.name}", write_file, temporary, data)
                    calls(f"rename to {name}", os.rename, temporary, root / name)
                    final[name] = data
                elif choice < 0.7:  # a shared file, one writer at a time (readers meanwhile)
                    index = rng.randrange(SHARED_FILES)
                    with shared_locks[index]:
                        calls(f"write shared/s{index}", write_file, root / f"shared/s{index}", data)
                        final[f"shared/s{index}"] = data
                elif choice < 0.9:
                    calls("read shared", read_file, root / f"shared/s{rng.randrange(SHARED_FILES)}")
                    name = f"t{number}/f{rng.randrange(OWN_FILES)}"
                    if name in final:
                        got = calls(f"read {name}", read_file, root / name)
                        if got != final[name]:
                            mismatches.append(f"{name} reads back {got[:40]!r}, not {final[name][:40]!r}")
                else:
                    calls("listdir", os.listdir, root / f"t{number}")
                    calls("listdir", os.listdir, root)
            except OSError:
                pass  # recorded by calls(); the test fails on any

    def reporting(name: str, target, *args):
        """target(*args) in a thread; whatever ends it is asserted in the test's own thread."""
        def run():
            try:
                target(*args)
            except BaseException as error:  # noqa: BLE001 - reported below, not swallowed
                crashed.append(f"{name}: {error!r}")
        return threading.Thread(target=run, name=name, daemon=True)

    def pusher():
        serial = 0
        while not stop.is_set():
            serial += 1
            try:
                remote.commit({f"pusher/p{serial % 5}": f"push {serial}\n"}, f"pusher {serial}")
                pushes.append(serial)
            except AssertionError:  # lost a push race to GitFS: try again next time
                git("reset", "-q", "--hard", f"origin/{remote.branch}", cwd=remote.work, check=False)
                push_failures.append(serial)
            stop.wait(1.0)

    pushes: list[int] = []
    push_failures: list[int] = []
    mismatches: list[str] = []  # reads that did not give back the thread's own last write
    crashed: list[str] = []
    threads = [reporting(f"worker {number}", worker, number) for number in range(THREADS)]
    threads.append(reporting("pusher", pusher))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    hangs = []
    pauser = random.Random(99)
    while time.monotonic() - started < duration and not hangs:
        # GitFS commits only after sync_timeout of quiet: pause the writers now and then,
        # for a random while, so that syncs run and are sometimes cut short by new writes.
        time.sleep(pauser.uniform(0.3, 1.5))
        go.clear()
        time.sleep(pauser.uniform(0.1, 0.8))
        go.set()
        hangs = calls.hung()
        assert mount.process.poll() is None, "the daemon died"
    stop.set()
    go.set()
    for thread in threads:
        thread.join(WATCHDOG * 3)
    hangs += calls.hung()
    assert not crashed, f"threads ended on an exception: {crashed}"
    assert not mismatches, f"reads that did not give back the last write: {mismatches[:10]}"
    assert not hangs, f"FUSE calls hung (deadlock?): {hangs}"
    assert not [thread.name for thread in threads if thread.is_alive()], "threads still running"
    assert not calls.errors, f"unexpected errors: {calls.errors[:10]} ({len(calls.errors)} in all)"
    assert mount.process.poll() is None, "the daemon died"

    wait_synced(mount, timeout=120)
    tree = remote_tree(remote.bare)
    lost = {path: data[:30] for path, data in final.items() if tree.get(path, (None, None))[1] != data}
    assert not lost, f"final contents missing on the remote: {lost}"
    for path, data in final.items():
        assert read_file(root / path) == data
    if pushes:
        last = max(pushes)
        assert tree[f"pusher/p{last % 5}"][1] == f"push {last}\n".encode()
        assert (root / f"pusher/p{last % 5}").read_bytes() == f"push {last}\n".encode()
    commits = len(remote.log())
    print(f"\nconcurrency: {duration:.0f} s, {THREADS} threads, {calls.count} calls, "
          f"slowest {calls.slowest[0]:.2f} s ({calls.slowest[1]}), {len(pushes)} pushes by the other clone "
          f"({len(push_failures)} lost a race), {commits} commits on the remote")


def test_concurrency_short(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.3, fetch_timeout=0.5)
    hammer(mount, remote, 10)


@pytest.mark.stress
def test_concurrency_60s(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.3, fetch_timeout=0.5)
    hammer(mount, remote, 60)
