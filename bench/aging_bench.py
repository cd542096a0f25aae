"""The aging and soak sections: a mount that lives for months.

aging: a clone aged by N of a colleague's pushes, each fetched by libgit2 (one pack per
fetch, as a mount left running for weeks has them), mounted with the 1,024 open files a
systemd service gets. Three ways, each mounted afresh for each round: the aged clone on a
machine without git (never tidied), the same clone once GitFS has tidied it (git gc), and
a copy of the aged clone after `git repack -ad` (the baseline). Open files (peak during
the reads, and once idle), memory maps, packs, and the reads: `cat` of every file in
current/, the versions of a busy file, `ls -l` of every day of history/, the daemon's CPU
time for them.

soak: a colleague pushing with git every second and a program appending a line through
the mount every second, `sync_timeout=1,fetch_timeout=1`, for 10 minutes (2 with --quick;
`--soak-minutes` for an hour): the daemon's RSS, open files, maps and threads and the
clone's packs and loose objects sampled every 30 s, their growth per hour once the caches
are full (from 10 minutes in; a minute in for a soak under 20 minutes), and every line
of both sides where it belongs at the end.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from harness import BRANCH, ROOT, Bench, Mount, fmt_mb, growth_per_hour, process_figures, ratio_x, run_op, secs

sys.path.insert(0, os.path.join(ROOT, "tests"))
from aging import FILES, OpenFilesPeak, age_clone, loose_count, pack_count  # noqa: E402  # the tests' aging helpers

AGING_PUSHES = 2000  # 400 with --quick
OPEN_FILES = 1024  # a systemd service's default LimitNOFILE
OPEN_FILES_BOUND = 256
AGING_OPTIONS = "sync_timeout=1,fetch_timeout=5,min_idle_times=2"
ROUNDS = 3
SOAK_MINUTES = 10  # 2 with --quick
SOAK_OPTIONS = "sync_timeout=1,fetch_timeout=1,log_level=info"
SAMPLE_SECONDS = 30
# Growth is counted from this many minutes in, once the caches are full (libgit2's object
# cache and pack windows fill in the first few); from a minute in for a soak under twice it.
SOAK_SETTLED_MINUTES = 10
# What a mount may grow by in an hour once settled, besides the pages of the clone's packs
# it maps (those follow the repository's size, up to libgit2's bounds).
SOAK_GROWTH_BOUND_KB = 1024
# A busy mount's clone is tidied past twice git's 50 packs, looked at once a minute: at a
# fetch a second, 100 + 60 packs at most, and a few more while the gc runs.
SOAK_PACKS_BOUND = 170


def _make_remote(bench: Bench, name: str) -> tuple[str, str]:
    """(bare remote, a colleague's clone of it) with FILES files of the colleague's."""
    bare, work = bench.path("remotes", name + ".git"), bench.path("colleagues", name)
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    bench.git("clone", "-q", bare, work)
    bench.git("checkout", "-q", "-B", BRANCH, cwd=work)
    for number in range(FILES):
        with open(os.path.join(work, f"colleague-{number:02d}.txt"), "w") as handle:
            handle.write("the first version\n")
    bench.git("add", "-A", cwd=work)
    bench.git("commit", "-q", "-m", "the team's folder", cwd=work)
    bench.git("push", "-q", "origin", BRANCH, cwd=work)
    return bare, work


def _path_without_git(bench: Bench) -> str:
    """A PATH holding only what libfuse runs to mount (a machine without git)."""
    folder = bench.path("bin-without-git")
    os.makedirs(folder, exist_ok=True)
    for program in ("fusermount3", "fusermount"):
        found = shutil.which(program)
        if found and not os.path.exists(os.path.join(folder, program)):
            os.symlink(found, os.path.join(folder, program))
    return folder


def _reads(bench: Bench, mount: Mount) -> dict[str, float]:
    """The reads of one fresh mount (page caches dropped first): seconds of each, the
    daemon's CPU time for all, its peak open files and its maps after them."""
    bench.drop_caches()
    cpu = mount.cpu_seconds()
    figures: dict[str, float] = {}
    with OpenFilesPeak(mount.pid) as peak:
        figures["cat"] = bench.sh(f"find {mount.current} -type f -print0 | xargs -0 cat > /dev/null")
        busy = os.path.join(mount.point, ".gitfs", "versions", "colleague-07.txt")
        figures["versions"] = run_op("versions", busy)["seconds"]
        figures["lsl"] = run_op("lsl", mount.history)["seconds"]
    after = mount.cpu_seconds()
    figures["cpu"] = after - cpu if after is not None and cpu is not None else float("nan")
    figures["peak open files"] = peak.peak
    figures["maps"] = process_figures(mount.pid).get("maps", 0)
    return figures


def _idle_figures(mount: Mount, timeout: float = 90) -> dict[str, int]:
    """Open files and maps once the mount is idle (when they stop going down)."""
    deadline, last = time.monotonic() + timeout, process_figures(mount.pid)
    while time.monotonic() < deadline:
        time.sleep(5)
        now = process_figures(mount.pid)
        if now.get("open files") == last.get("open files") and now.get("open files", 99) <= 16:
            return now
        last = now
    return last


def _tidied_seconds(log_path: str) -> Optional[float]:
    try:
        with open(log_path, errors="replace") as handle:
            for line in handle:
                if "clone tidied in " in line:
                    return float(line.split("clone tidied in ", 1)[1].split(" s", 1)[0])
    except (OSError, ValueError):
        return None
    return None


def bench_aging(bench: Bench, pushes: int) -> None:
    tag = f"[aging, {pushes} fetches] "
    bare, _work = _make_remote(bench, "aging")
    first = Mount(bench, bare, "aging", AGING_OPTIONS)
    first.mount()
    first.unmount()
    clone = Path(first.repo_path)
    print(f"{tag}aging the clone by {pushes} fetches ...", flush=True)
    started = time.perf_counter()
    age_clone(bare, clone, pushes)
    bench.notes.append(f"aging: the clone aged by {pushes} pushes, each fetched by libgit2, in "
                       f"{time.perf_counter() - started:.0f} s: {pack_count(clone)} packs, "
                       f"{loose_count(clone)} loose objects")
    aged_packs = pack_count(clone)
    repacked = Mount(bench, bare, "aging-repacked", AGING_OPTIONS, open_files=OPEN_FILES)
    shutil.copytree(clone, repacked.repo_path, symlinks=True)
    bench.git("repack", "-q", "-a", "-d", cwd=repacked.repo_path)
    bench.git("prune-packed", cwd=repacked.repo_path)
    without_git = _path_without_git(bench)

    def rounds(make: Callable[[], Mount], count: int = ROUNDS) -> list[dict[str, float]]:
        results = []
        for _ in range(count):
            mount = make()
            mount.mount()
            results.append(_reads(bench, mount))
            mount.unmount()
        return results

    untidied = rounds(lambda: Mount(bench, bare, "aging", AGING_OPTIONS, open_files=OPEN_FILES, path=without_git))
    if pack_count(clone) < aged_packs:
        bench.problem("the clone was tidied by a mount without git")

    # The tidying: a mount with git, left idle.
    print(f"{tag}mounted with git: waiting for the clone to be tidied ...", flush=True)
    tidying = Mount(bench, bare, "aging", AGING_OPTIONS + ",log_level=info", open_files=OPEN_FILES)
    tidying.mount()
    just_mounted = process_figures(tidying.pid)
    with OpenFilesPeak(tidying.pid) as tidying_peak:
        deadline = time.monotonic() + 600
        while pack_count(clone) > 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        idle = _idle_figures(tidying)
    tidy_seconds = _tidied_seconds(tidying.log)
    tidying.unmount()
    packs_after, loose_after = pack_count(clone), loose_count(clone)

    tidied: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    for _ in range(ROUNDS):  # alternated, so that the machine's load weighs on both alike
        tidied += rounds(lambda: Mount(bench, bare, "aging", AGING_OPTIONS, open_files=OPEN_FILES), 1)
        baseline += rounds(lambda: Mount(bench, bare, "aging-repacked", AGING_OPTIONS, open_files=OPEN_FILES), 1)

    def median(results: list[dict[str, float]], key: str) -> float:
        return statistics.median(result[key] for result in results)

    bench.row(tag + "packs: aged, then after the tidying", f"{aged_packs} → {packs_after}", "1 git repack -ad",
              "", "≤ 2", packs_after <= 2)
    bench.row(tag + "  loose objects after the tidying", str(loose_after), "0 git repack -ad", "", "")
    bench.row(tag + "  the tidying (git gc) took", secs(tidy_seconds), "—", "", "")
    peak_untidied = max(result["peak open files"] for result in untidied)
    peak_tidied = max([tidying_peak.peak] + [result["peak open files"] for result in tidied])
    peak_baseline = max(result["peak open files"] for result in baseline)
    bench.row(tag + "open files, peak: untidied (no git)", str(peak_untidied), f"{peak_baseline} repacked",
              ratio_x(peak_untidied, peak_baseline), f"≤ {OPEN_FILES_BOUND}", peak_untidied <= OPEN_FILES_BOUND)
    bench.row(tag + "open files, peak: mounted aged, tidied, read", str(peak_tidied), f"{peak_baseline} repacked",
              ratio_x(peak_tidied, peak_baseline), f"≤ {OPEN_FILES_BOUND}", peak_tidied <= OPEN_FILES_BOUND)
    bench.row(tag + "open files: just mounted aged, then once tidied and idle",
              f"{just_mounted.get('open files')} → {idle.get('open files')}", "—", "", "≤ 16 idle",
              idle.get("open files", 999) <= 16)
    bench.row(tag + "memory maps: just mounted aged, then once tidied and idle",
              f"{just_mounted.get('maps')} → {idle.get('maps')}", "—", "", "")
    for key, figure in (("maps", "memory maps after the reads"), ("cat", "cat of every file in current/"),
                        ("versions", "ls .gitfs/versions/ of a busy file"), ("lsl", "ls -l of every day of history/"),
                        ("cpu", "daemon CPU time for these reads")):
        value_untidied, value_tidied, value_base = (median(results, key) for results in (untidied, tidied, baseline))
        show: Callable[[float], str] = (lambda value: str(int(value))) if key == "maps" else secs
        bench.row(tag + f"{figure}: untidied (no git)", show(value_untidied), show(value_base) + " repacked",
                  ratio_x(value_untidied, value_base), "")
        bench.row(tag + f"{figure}: tidied", show(value_tidied), show(value_base) + " repacked",
                  ratio_x(value_tidied, value_base), "≤ 1.2× repacked", value_tidied <= 1.2 * value_base)
    for name in ("aging", "aging-repacked"):
        shutil.rmtree(bench.path("clones", name), ignore_errors=True)


class Colleague(threading.Thread):
    """Appends a numbered line to colleague.txt, commits and pushes with git, every second."""

    def __init__(self, bench: Bench, work: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.bench, self.work, self.stop = bench, work, stop
        self.pushed = 0  # lines on the remote
        self.refused = 0  # pushes that lost a race with the mount's (pulled and pushed again)

    def run(self) -> None:
        path = os.path.join(self.work, "colleague.txt")
        while not self.stop.wait(1.0):
            with open(path, "a") as handle:
                handle.write(f"colleague line {self.pushed}\n")
            self.bench.git("commit", "-q", "-am", f"line {self.pushed}", cwd=self.work)
            while not self.stop.is_set():
                try:
                    self.bench.git("pull", "-q", "--rebase", "origin", BRANCH, cwd=self.work)
                    self.bench.git("push", "-q", "origin", BRANCH, cwd=self.work)
                    break
                except RuntimeError:
                    self.refused += 1
            else:
                return
            self.pushed += 1


class Writer(threading.Thread):
    """Appends a numbered line to notes.txt through the mount every second (open, write, close)."""

    def __init__(self, current: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.path, self.stop = os.path.join(current, "notes.txt"), stop
        self.written = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                with open(self.path, "a") as handle:
                    handle.write(f"mount line {self.written}\n")
                self.written += 1
            except OSError as error:
                self.failures.append(str(error))


def bench_soak(bench: Bench, minutes: float) -> None:
    tag = f"[soak, {minutes:g} min] "
    bare, work = _make_remote(bench, "soak")
    with open(os.path.join(work, "colleague.txt"), "w") as handle:
        handle.write("")
    bench.git("add", "colleague.txt", cwd=work)
    bench.git("commit", "-q", "-m", "colleague.txt", cwd=work)
    bench.git("push", "-q", "origin", BRANCH, cwd=work)
    mount = Mount(bench, bare, "soak", SOAK_OPTIONS, open_files=OPEN_FILES)
    mount.mount()
    stop = threading.Event()
    colleague, writer = Colleague(bench, work, stop), Writer(mount.current, stop)
    samples: list[tuple[float, dict[str, int]]] = []

    pack_dir = Path(mount.repo_path) / ".git" / "objects" / "pack"

    def sample() -> None:
        figures = process_figures(mount.pid, str(pack_dir))
        clone = Path(mount.repo_path)
        figures["packs"], figures["loose objects"] = pack_count(clone), loose_count(clone)
        if "RSS kB" in figures:
            figures["RSS without pack pages kB"] = figures["RSS kB"] - figures.get("RSS pack kB", 0)
        figures["pack files kB"] = _folder_kb(pack_dir)
        samples.append((time.monotonic(), figures))

    print(f"{tag}a colleague pushing and a writer appending every second ...", flush=True)
    sample()
    colleague.start()
    writer.start()
    end = time.monotonic() + minutes * 60
    while time.monotonic() < end:
        time.sleep(min(SAMPLE_SECONDS, max(0.0, end - time.monotonic())))
        sample()
    stop.set()
    colleague.join(timeout=60)
    writer.join(timeout=60)
    expected_mine = "".join(f"mount line {number}\n" for number in range(writer.written))
    expected_theirs = "".join(f"colleague line {number}\n" for number in range(colleague.pushed))
    deadline = time.monotonic() + 180
    on_remote = in_mount = ""
    while time.monotonic() < deadline:
        on_remote = _remote_text(bench, bare, "notes.txt")
        try:
            with open(os.path.join(mount.current, "colleague.txt")) as handle:
                in_mount = handle.read()
        except OSError:
            in_mount = ""
        if on_remote == expected_mine and in_mount == expected_theirs:
            break
        time.sleep(1)
    tidyings = _count_in(mount.log, "clone tidied in ")
    mount.unmount()
    shutil.rmtree(mount.repo_path, ignore_errors=True)

    bench.row(tag + "the writer's lines on the remote", f"{on_remote.count(chr(10))} of {writer.written}", "—", "",
              "all", on_remote == expected_mine and not writer.failures)
    bench.row(tag + "the colleague's lines in current/", f"{in_mount.count(chr(10))} of {colleague.pushed}", "—",
              "", "all", in_mount == expected_theirs)
    bench.row(tag + "  the colleague's pushes that lost a race (pulled, pushed again)", str(colleague.refused),
              "—", "", "")
    bench.row(tag + "  clone tidied (git gc) during the soak", f"{tidyings} times", "—", "", "")
    if writer.failures:
        bench.problem(f"soak: writes through the mount failed: {writer.failures[:3]}")
    # Growth: from the sample once the mount settled to the last, and the slope of a
    # least-squares line through every sample from then on.
    settled = SOAK_SETTLED_MINUTES if minutes >= 2 * SOAK_SETTLED_MINUTES else 1
    start_at, start = next(((at, figures) for at, figures in samples if at - samples[0][0] >= settled * 60),
                           samples[0])
    end_at, last = samples[-1]
    by_minute = [figures for at, figures in samples if round(at - samples[0][0]) % 60 < SAMPLE_SECONDS / 2]
    bench.notes.append("soak: RSS (anonymous; the clone's pack pages) by minute, MB: " + ", ".join(
        f"{figures.get('RSS kB', 0) / 1024:.1f} ({figures.get('RSS anon kB', 0) / 1024:.1f}; "
        f"{figures.get('RSS pack kB', 0) / 1024:.1f})" for figures in by_minute))
    for key in ("RSS kB", "RSS anon kB", "RSS without pack pages kB", "RSS pack kB", "pack files kB", "open files",
                "maps", "threads", "packs", "loose objects"):
        highest = max(figures.get(key, 0) for _, figures in samples)
        per_hour = growth_per_hour([(at, figures.get(key, 0)) for at, figures in samples if at >= start_at])
        in_kb = key.endswith(" kB")
        show: Callable[[float], str] = fmt_mb if in_kb else (lambda value: f"{value:.0f}")
        name = key[:-3] if in_kb else key
        target, ok = "", None
        if key == "open files":
            target, ok = f"≤ {OPEN_FILES_BOUND} always", highest <= OPEN_FILES_BOUND
        elif key == "packs":
            target, ok = f"≤ {SOAK_PACKS_BOUND} always", highest <= SOAK_PACKS_BOUND
        elif key == "RSS without pack pages kB" and end_at - start_at >= 30 * 60:
            target, ok = f"≤ {fmt_mb(SOAK_GROWTH_BOUND_KB)}/hour", per_hour <= SOAK_GROWTH_BOUND_KB
        per_hour_text = fmt_mb(per_hour) if in_kb else f"{per_hour:+.0f}"
        bench.row(tag + f"{name}: {settled} min in → at the end (highest)",
                  f"{show(start.get(key, 0))} → {show(last.get(key, 0))} ({show(highest)})",
                  f"{per_hour_text}/hour", "", target, ok)


def _folder_kb(folder: Path) -> int:
    """The size of the files in a folder, kB (the clone's packs: what libgit2 maps)."""
    try:
        return sum(entry.stat().st_size for entry in os.scandir(folder) if entry.is_file()) // 1024
    except OSError:
        return 0


def _remote_text(bench: Bench, bare: str, path: str) -> str:
    result = subprocess.run(["git", "--git-dir", bare, "show", f"{BRANCH}:{path}"], env=bench.env,
                            capture_output=True)
    return result.stdout.decode(errors="replace") if result.returncode == 0 else ""


def _count_in(path: str, text: str) -> int:
    try:
        with open(path, errors="replace") as handle:
            return handle.read().count(text)
    except OSError:
        return 0
