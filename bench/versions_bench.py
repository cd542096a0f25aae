"""The versions section: the versions of a file changed in every commit of a long history,
and of one changed once, with peak and held RSS, beside git log -- FILE."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import time
from typing import Optional

from harness import BRANCH, Bench, Mount, fmt_mb, growth, median_of, memory_row, ratio_x, run_op, secs

BUSY_COMMITS = 300_000  # the busy-file history: one file changed in every commit (30,000 with --quick)


BUSY_FILE, ONCE_FILE = "notes.txt", "data/f1.txt"


# Idle 20 s after the last call: longer than any step's pause, so that nothing is let go between steps.
BUSY_OPTIONS = "sync_timeout=2,min_idle_times=10,fetch_timeout=5"


BUSY_IDLE_WAIT = 20 + 5 + 3


def generate_busy_remote(bench: Bench, bare: str, commits: int) -> tuple[float, int]:
    """`commits` commits over ten years, each changing BUSY_FILE (a log a script writes);
    ONCE_FILE and three other files written by the first alone. (seconds, days with commits)."""
    start_time = time.perf_counter()
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    first = int(time.time()) - 3652 * 86400
    step = 3652 * 86400 // commits
    chunks = []
    for number in range(commits):
        data = b"status %d\n" % number
        chunks.append(b"commit refs/heads/%s\ncommitter Bench <bench@example.com> %d +0000\ndata 0\n"
                      b"M 100644 inline %s\ndata %d\n%s\n" % (BRANCH.encode(), first + number * step,
                                                              BUSY_FILE.encode(), len(data), data))
        if number == 0:
            for index in range(1, 5):
                once = b"file %d, written once\n" % index
                chunks.append(b"M 100644 inline data/f%d.txt\ndata %d\n%s\n" % (index, len(once), once))
        chunks.append(b"\n")
    bench.git("fast-import", "--quiet", cwd=bare, stdin=b"".join(chunks), capture=False)
    days = {time.strftime("%Y-%m-%d", time.localtime(first + number * step)) for number in range(commits)}
    return time.perf_counter() - start_time, len(days)


def bench_busy_file(bench: Bench, commits: int) -> None:
    """The versions of a file changed in every commit of a long history, and of one changed
    once: the daemon's RSS at each step (its peak during the step, and after), each listing's
    time beside `git log --format=%H -- FILE`, and RSS once idle beside RSS after `ls history/`."""
    tag = f"[busy file, {commits} commits] "
    print(f"{tag}generating ...", flush=True)
    bare = bench.path("remotes", f"busy-{commits}.git")
    gen_seconds, day_count = generate_busy_remote(bench, bare, commits)
    bench.notes.append(f"busy file: {commits} commits on {day_count} days, {BUSY_FILE} changed in each, "
                       f"{ONCE_FILE} in the first only; generated in {gen_seconds:.1f} s")

    log_cpu: list[float] = []  # git log's CPU time (user + system) of each run

    def gitlog(name: str) -> float:
        cpu = _children_cpu()
        start = time.perf_counter()
        bench.git("--git-dir", bare, "log", "--format=%H", BRANCH, "--", name)
        log_cpu.append(_children_cpu() - cpu)
        return time.perf_counter() - start

    busy_log = median_of(3, lambda: gitlog(BUSY_FILE))
    busy_log_cpu = statistics.median(log_cpu)
    mount = Mount(bench, bare, f"busy-{commits}", BUSY_OPTIONS)
    mount.mount()
    versions = os.path.join(mount.point, ".gitfs", "versions")
    rss_mounted = mount.rss_kb()
    bench.row(tag + "daemon RSS just mounted", fmt_mb(rss_mounted), "—", "—", "")
    mount.reset_peak()
    run_op("ls", mount.history)
    rss_history = mount.rss_kb()
    memory_row(bench, tag + "daemon RSS after ls history/", mount, rss_mounted, commits, target=False)

    def step(op: str, name: str) -> tuple[dict, Optional[int], Optional[int]]:
        mount.reset_peak()
        cpu = mount.cpu_seconds()
        listed = run_op(op, os.path.join(versions, name))
        after_cpu = mount.cpu_seconds()
        listed["cpu"] = after_cpu - cpu if cpu is not None and after_cpu is not None else None
        return listed, mount.rss_kb("VmHWM"), mount.rss_kb()

    once, peak, after = step("versions", ONCE_FILE)
    if once["versions"] != 1:
        bench.problem(f"{ONCE_FILE} lists {once['versions']} versions; it was written once")
    once_log = gitlog(ONCE_FILE)
    bench.row(tag + f"ls .gitfs/versions/{ONCE_FILE} (1 version): time", secs(once["seconds"]),
              f"{secs(once_log)} git log", ratio_x(once["seconds"], once_log), "")
    bench.row(tag + "  peak RSS during it, over RSS before", fmt_mb(peak), fmt_mb(rss_history),
              growth(peak, rss_history), "≤ +10 MB", _within(peak, rss_history, 10 * 1024))
    bench.row(tag + "  RSS after it, over RSS before", fmt_mb(after), fmt_mb(rss_history),
              growth(after, rss_history), "≤ +1 MB", _within(after, rss_history, 1024))
    before = after
    first, peak, after = step("versions", BUSY_FILE)
    if first["versions"] != commits:
        bench.problem(f"{BUSY_FILE} lists {first['versions']} versions; git log says {commits}")
    bench.row(tag + f"ls .gitfs/versions/{BUSY_FILE} ({commits} versions), first", secs(first["seconds"]),
              f"{secs(busy_log)} git log", ratio_x(first["seconds"], busy_log), "≤ 2× git log",
              first["seconds"] <= 2 * busy_log)
    if first["cpu"] is not None:
        # Wall times move with the machine's load (2 cores shared); CPU times much less.
        bench.row(tag + "  daemon CPU time for it, beside git log's", secs(first["cpu"]),
                  f"{secs(busy_log_cpu)} git log", ratio_x(first["cpu"], busy_log_cpu), "")
    per_version = f"{(peak - before) * 1024 / commits:.0f} B/version" if peak and before else "—"
    bench.row(tag + "  peak RSS during it, per version", fmt_mb(peak), fmt_mb(before), per_version, "")
    again, _peak, _after = step("versions", BUSY_FILE)
    bench.row(tag + "the same listing again", secs(again["seconds"]), f"{secs(busy_log)} git log",
              ratio_x(again["seconds"], busy_log), "≤ 1× git log", again["seconds"] <= busy_log)
    long_listing, peak, after = step("versions_lsl", BUSY_FILE)
    bench.row(tag + "ls -l of it (listdir + lstat of each)", secs(long_listing["seconds"]),
              f"{secs(again['seconds'])} ls", ratio_x(long_listing["seconds"], again["seconds"]), "≤ 1.5× ls",
              long_listing["seconds"] <= 1.5 * again["seconds"])
    per_version = f"{(after - before) * 1024 / commits:.0f} B/version" if after and before else "—"
    bench.row(tag + "  RSS after the listings, per version over RSS before", fmt_mb(after), fmt_mb(before),
              per_version, "≤ 300 B/version", after is not None and before is not None
              and (after - before) * 1024 <= 300 * commits)
    print(f"{tag}waiting {BUSY_IDLE_WAIT} s for the mount to be idle ...", flush=True)
    time.sleep(BUSY_IDLE_WAIT)
    idle = mount.rss_kb()
    bench.row(tag + "daemon RSS once idle, beside RSS after ls history/", fmt_mb(idle), fmt_mb(rss_history),
              growth(idle, rss_history), "≤ +20 %",
              idle is not None and rss_history is not None and idle <= 1.2 * rss_history)
    mount.unmount()
    shutil.rmtree(mount.repo_path, ignore_errors=True)


def _children_cpu() -> float:
    """User + system CPU time of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _within(value: Optional[int], base: Optional[int], kb: int) -> Optional[bool]:
    return None if value is None or base is None else value - base <= kb
