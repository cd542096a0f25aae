"""The busy section: a folder that never rests, `sync_timeout=1,max_sync_delay=5`, path remotes.

A logger writes a row every 0.1 s for 2 minutes (30 s with --quick; `--busy-minutes`), on a
mount of its own each way: reopening its file for every row (open, write, close), then
holding one file open (line-buffered). Beside it, a one-shot save of another file (open,
write, close) every 7 s. The bare remote is polled every 0.2 s (`git rev-parse`, then `git
show BRANCH:FILE` when the branch moved): a row's or a save's delay is from just after its
write(2) to the poll that first sees it on the remote. Also the remote's commits over the run
(per hour), the daemon's CPU time per minute (/proc/PID/stat utime + stime), and whether the
held file shows in `.gitfs/status`'s `writing` list. The baseline: a quiet mount's save
(no logger, one save at a time: about sync_timeout + commit + push), and max_sync_delay.
Before max_sync_delay, neither logger's rows nor the saves beside them reached the remote
while the logger ran: the quiet period never came (the reopening logger) or a file was
always open for writing (the held one).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from typing import Callable, Optional

from harness import BRANCH, Bench, Mount, ratio_x, secs

BUSY_MINUTES = 2.0  # 0.5 with --quick
SYNC_TIMEOUT = 1.0
MAX_SYNC_DELAY = 5.0
BUSY_OPTIONS = f"sync_timeout={SYNC_TIMEOUT:g},max_sync_delay={MAX_SYNC_DELAY:g}"
ROW_EVERY = 0.1  # seconds: 10 rows a second
SAVE_EVERY = 7.0  # seconds between the one-shot saves beside the logger
POLL_EVERY = 0.2  # seconds between two looks at the remote
QUIET_SAVES = 6  # 3 with --quick
DRAIN_SECONDS = 60.0  # after the logger stops, for its last rows to arrive
LOG_FILE = "logger.csv"
SAVE_FILE = "notes.txt"


class RemoteWatch(threading.Thread):
    """Polls the bare remote every POLL_EVERY: when the branch has moved, reads LOG_FILE and
    SAVE_FILE there and records when each row (by count: rows are appended in order) and each
    save (by its number) was first seen."""

    def __init__(self, bench: Bench, bare: str):
        super().__init__(daemon=True)
        self.bench, self.bare = bench, bare
        self.stop = threading.Event()
        self.row_seen: list[float] = []  # monotonic time row N was first on the remote
        self.save_seen: dict[int, float] = {}
        self.remote_rows: list[str] = []
        self.tip = ""

    def _git(self, *args: str) -> Optional[str]:
        result = subprocess.run(["git", "--git-dir", self.bare, *args], env=self.bench.env, capture_output=True)
        return result.stdout.decode(errors="replace") if result.returncode == 0 else None

    def look(self) -> None:
        tip = (self._git("rev-parse", BRANCH) or "").strip()
        seen_at = time.monotonic()
        if tip == self.tip:
            return
        self.tip = tip
        self.remote_rows = (self._git("show", f"{BRANCH}:{LOG_FILE}") or "").splitlines()
        while len(self.row_seen) < len(self.remote_rows):
            self.row_seen.append(seen_at)
        saved = (self._git("show", f"{BRANCH}:{SAVE_FILE}") or "").split()
        if saved[:1] == ["save"]:
            self.save_seen.setdefault(int(saved[1]), seen_at)

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            self.look()
            self.stop.wait(max(POLL_EVERY - (time.monotonic() - started), 0.0))

    def commits(self) -> int:
        return int((self._git("rev-list", "--count", BRANCH) or "0").strip())


class Logger(threading.Thread):
    """A row every ROW_EVERY seconds into LOG_FILE: reopening the file for each row, or
    holding it open (line-buffered); `written[N]` is when row N's write(2) returned."""

    def __init__(self, current: str, held: bool):
        super().__init__(daemon=True)
        self.path, self.held = os.path.join(current, LOG_FILE), held
        self.stop = threading.Event()
        self.written: list[float] = []
        self.rows: list[str] = []
        self.failures: list[str] = []

    def run(self) -> None:
        handle = open(self.path, "a", buffering=1) if self.held else None
        next_at = time.monotonic()
        try:
            while not self.stop.is_set():
                row = f"{time.time():.3f},row {len(self.rows)}"
                try:
                    if handle is not None:
                        handle.write(row + "\n")  # line-buffered: one write(2) a row
                    else:
                        with open(self.path, "a") as each:
                            each.write(row + "\n")
                except OSError as error:
                    self.failures.append(str(error))
                    return
                self.written.append(time.monotonic())
                self.rows.append(row)
                next_at += ROW_EVERY
                self.stop.wait(max(next_at - time.monotonic(), 0.0))
        finally:
            if handle is not None:
                handle.close()


class Saver(threading.Thread):
    """A one-shot save of SAVE_FILE (open, write 'save N', close) every SAVE_EVERY seconds."""

    def __init__(self, current: str):
        super().__init__(daemon=True)
        self.path = os.path.join(current, SAVE_FILE)
        self.stop = threading.Event()
        self.saved: list[float] = []
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(SAVE_EVERY):
            try:
                save(self.path, len(self.saved))
            except OSError as error:
                self.failures.append(str(error))
                return
            self.saved.append(time.monotonic())


def save(path: str, number: int) -> None:
    with open(path, "w") as handle:
        handle.write(f"save {number}\n")


def _make_remote(bench: Bench, name: str) -> str:
    bare, work = bench.path("remotes", f"busy-{name}.git"), bench.path("busy-work", name)
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    os.makedirs(work)
    bench.git("init", "-q", "-b", BRANCH, work)
    with open(os.path.join(work, "README"), "w") as handle:
        handle.write("a folder that never rests\n")
    bench.git("add", "README", cwd=work)
    bench.git("commit", "-q", "-m", "start", cwd=work)
    bench.git("push", "-q", bare, BRANCH, cwd=work)
    return bare


def _delays(written: list[float], seen: list[float]) -> list[float]:
    return [at - wrote for wrote, at in zip(written, seen)]


def _median_max(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{secs(statistics.median(values))} ({secs(max(values))})"


def _wait(watch: RemoteWatch, done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(POLL_EVERY / 2)
    return done()


def bench_busy(bench: Bench, minutes: float, quick: bool) -> None:
    tag = f"[busy, {BUSY_OPTIONS}] "
    print(f"{tag}a quiet mount's saves, then a logger at {1 / ROW_EVERY:.0f} rows/s reopening its file, "
          "then one holding it open, each beside a save every 7 s ...", flush=True)
    quiet, quiet_cpu = _quiet_saves(bench, QUIET_SAVES // 2 if quick else QUIET_SAVES)
    bench.row(tag + f"quiet mount (no logger): a save's delay to the remote, median (max) of {len(quiet)}",
              _median_max(quiet), f"sync_timeout {secs(SYNC_TIMEOUT)}",
              ratio_x(statistics.median(quiet) if quiet else None, SYNC_TIMEOUT), "")
    quiet_median = statistics.median(quiet) if quiet else None
    bound = MAX_SYNC_DELAY + (max(quiet) if quiet else 0.0)
    for held in (False, True):
        _logger_run(bench, tag, minutes, held, quiet_median, bound, quiet_cpu)


def _quiet_saves(bench: Bench, count: int) -> tuple[list[float], Optional[float]]:
    """Delays of `count` saves on a mount with nothing else going on, one at a time, and the
    daemon's CPU seconds per minute over them."""
    bare = _make_remote(bench, "quiet")
    mount = Mount(bench, bare, "busy-quiet", BUSY_OPTIONS)
    mount.mount()
    watch = RemoteWatch(bench, bare)
    watch.look()
    watch.start()
    delays: list[float] = []
    cpu_before, started = mount.cpu_seconds(), time.monotonic()
    try:
        time.sleep(2 * SYNC_TIMEOUT)  # the mount settled
        for number in range(count):
            save(os.path.join(mount.current, SAVE_FILE), number)
            wrote = time.monotonic()
            if not _wait(watch, lambda number=number: number in watch.save_seen, 60):
                bench.problem(f"busy: quiet save {number} not on the remote after 60 s")
                break
            delays.append(watch.save_seen[number] - wrote)
            time.sleep(2 * SYNC_TIMEOUT)
        cpu_after, ended = mount.cpu_seconds(), time.monotonic()
    finally:
        watch.stop.set()
        watch.join(10)
        mount.unmount()
    cpu = (cpu_after - cpu_before) / ((ended - started) / 60) if None not in (cpu_before, cpu_after) else None
    return delays, cpu


def _logger_run(bench: Bench, tag: str, minutes: float, held: bool, quiet_median: Optional[float],
                bound: float, quiet_cpu: Optional[float]) -> None:
    kind = "held-open logger (line-buffered)" if held else "reopening logger (open, write, close a row)"
    name = "held" if held else "reopen"
    bare = _make_remote(bench, name)
    mount = Mount(bench, bare, f"busy-{name}", BUSY_OPTIONS)
    mount.mount()
    watch = RemoteWatch(bench, bare)
    watch.look()
    watch.start()
    logger, saver = Logger(mount.current, held), Saver(mount.current)
    named_writing = looks = 0
    try:
        commits_before, cpu_before = watch.commits(), mount.cpu_seconds()
        started = time.monotonic()
        logger.start()
        saver.start()
        end = started + minutes * 60
        while time.monotonic() < end:
            time.sleep(min(1.0, max(end - time.monotonic(), 0.0)))
            status = mount.status()
            if status is not None:
                looks += 1
                named_writing += any(busy.get("path") == LOG_FILE for busy in status.get("writing", []))
        rows_during = len(watch.row_seen)
        saves_during = len(watch.save_seen)
        logger.stop.set()
        saver.stop.set()
        logger.join(10)
        saver.join(10)
        ended = time.monotonic()
        cpu_after, commits_after = mount.cpu_seconds(), watch.commits()
        written = len(logger.rows)
        _wait(watch, lambda: len(watch.row_seen) >= written and len(watch.save_seen) >= len(saver.saved),
              DRAIN_SECONDS)
    finally:
        watch.stop.set()
        watch.join(10)
        mount.unmount()
    seconds = ended - started
    rows = _delays(logger.written, watch.row_seen)
    saves = [watch.save_seen[number] - at for number, at in enumerate(saver.saved) if number in watch.save_seen]
    intact = watch.remote_rows == logger.rows
    what = f"{kind}, {1 / ROW_EVERY:.0f} rows/s for {minutes:g} min"
    row_max = max(rows) if rows else None
    bench.row(tag + f"{what}: a row's delay to the remote, median (max) of {len(rows)}", _median_max(rows),
              f"quiet save {secs(quiet_median)}; max_sync_delay {secs(MAX_SYNC_DELAY)}",
              ratio_x(statistics.median(rows) if rows else None, quiet_median),
              f"max ≤ max_sync_delay + quiet max ({secs(bound)})", row_max is not None and row_max <= bound)
    bench.row(tag + f"{what}: rows on the remote while it ran; all, in order, at the end",
              f"{rows_during} of {written}; {len(watch.remote_rows)}", "before max_sync_delay: 0", "",
              "all, in order", intact and not logger.failures)
    save_max = max(saves) if saves else None
    bench.row(tag + f"{what}: a save beside it (one every {SAVE_EVERY:g} s), its delay, median (max) of {len(saves)}",
              _median_max(saves), f"quiet save {secs(quiet_median)}",
              ratio_x(statistics.median(saves) if saves else None, quiet_median),
              f"max ≤ {secs(bound)}", save_max is not None and save_max <= bound and len(saves) == len(saver.saved))
    if saves_during < len(saver.saved):
        bench.notes.append(f"busy, {name}: {len(saver.saved) - saves_during} of {len(saver.saved)} saves "
                           "arrived after the logger stopped (made in its last max_sync_delay)")
    commits = commits_after - commits_before
    bench.row(tag + f"{what}: the remote's commits per hour ({commits} in {seconds:.0f} s)",
              f"{commits * 3600 / seconds:.0f}/hour", f"3600 / max_sync_delay = {3600 / MAX_SYNC_DELAY:.0f}",
              ratio_x(commits * 3600 / seconds, 3600 / MAX_SYNC_DELAY), "")
    cpu = (cpu_after - cpu_before) / (seconds / 60) if None not in (cpu_before, cpu_after) else None
    bench.row(tag + f"{what}: the daemon's CPU time per minute",
              "—" if cpu is None else f"{cpu:.1f} s/min",
              "—" if quiet_cpu is None else f"{quiet_cpu:.2f} s/min quiet", ratio_x(cpu, quiet_cpu), "")
    if held:
        bench.row(tag + f"{what}: .gitfs/status's 'writing' names the file (looks, once a second)",
                  f"{named_writing} of {looks}", "—", "", "most", looks > 0 and named_writing >= looks // 2)
    for failure in logger.failures + saver.failures:
        bench.problem(f"busy, {name}: {failure}")
