#!/usr/bin/env python3
"""GitFS benchmark: `make bench` (= python3 bench/run.py [--quick] [--histories long,short]
[--commits N] [--scale 17000,170000]).

One run, side by side with baselines taken on the same machine at the same time,
prints a table: figure | GitFS | baseline | ratio | target | met? | rclone.

  1. two generated bare remotes of a 12-file tree, written by `git fast-import`:
     "long", 17,000 commits over 4,250 days (one to eight a day), and "short",
     17,000 commits over ~730 days (about 650 of them with commits);
  2. mount time (fresh repo_path) vs `git clone` of the same remote;
  3. listing every day and commit folder of history/ (cold, just after mount, and
     warm) vs `git log --format=%H%ct`;
  4. `ls -l` of every commit folder; 5. `ls -R history/`; 6. daemon RSS;
  7. reading a 100 MiB file from current/ (cold, then from the page cache) and
     history/ vs `cat` on the native disk and `git cat-file blob`, from history/ both
     as the clone got it (packed) and as GitFS committed it (a loose object), with the
     daemon's CPU time;
  8. `tar x` of 1000 small files into current/: tar time, time until every file is
     on the remote, number of commits;
  9. `find current/ -type f | xargs cat`, `find -type f` and `ls -lR` on a
     5,000-file tree vs a native copy;
 10. the per-file workloads of a 20,000-file project (1,000 folders, 2,000 commits;
     `--tree FILES:COMMITS` for others), cold (a fresh mount of the same clone) and
     warm: `grep -rl WORD` in current/ vs grep on the clone's tree and in a commit
     folder vs `git grep -l`, `diff -rq` of two commit folders vs the same trees on
     disk, `cp -a` of a commit folder vs `git archive | tar x`, `find -type f` in
     current/; with `--count-round-trips`, the requests the daemon answered (strace)
     and the floor they make;
 11. batches: a burst copied into current/ (1,000 files of 4 KiB; 3 of 60 MB random bytes;
     200 sparse files of 9.5 MB; an fsstress-like tree of 2,700 files up to 20 folders deep,
     a third sparse): time until the remote has it (and until committed) vs `git add -A &&
     git commit` + `git push` of the same tree to a remote of its own, the seconds the
     status said nothing pending before the remote had it, the daemon's peak RSS and the
     unmount time.

The current/ workloads also run on an rclone mount of a local folder (`rclone
mount --vfs-cache-mode writes`), the peer, when rclone is installed and mounts.
`--scale 17000,170000` instead reports mount time, listing time, the daemon's CPU time
and RSS (per commit) for long histories of each size (slow: not for CI; 300000 takes
about four minutes).

Standard library only (and pygit2, GitFS's own, for the inflate floor), plus `git`,
`tar`, `cat`, `find`, `xargs` and `fusermount3`.
Everything lives under one temporary directory, removed at the end; every mount
is unmounted in a `finally`. Operations that touch a mount run in a child process
with a timeout, so that a hung mount cannot hang the benchmark.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from typing import Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRANCH = "main"
FILES_IN_TREE = 12
DAYS = 730
BIG_MB = 100  # MiB
LONG_DAYS = 4250  # the long history: 17,000 commits over 4,250 days, one to eight a day
TAR_FILES = 1000
TAR_ROUND_TRIPS = 8  # per file of a tar x into current/, as root (see bench_tar)
SMALL_TREE_FILES = 5000
# The history mounts count as idle 10 s after the last call (2 × sync_timeout) and fetch
# every 5 s, so that the memory an idle mount gives back shows within the run.
HISTORY_OPTIONS = "min_idle_times=2,fetch_timeout=5"
IDLE_WAIT = 10 + 5 + 2  # seconds: idle, the fetch worker's next round, and a margin
OP_TIMEOUT = 600.0  # seconds for one operation on a mount before it counts as hung
MB = 1 << 20


# -- operations on a mount, run in a child process (see --op) --------------------------

def op_list(history: str) -> dict:
    """listdir(history) then listdir of every day."""
    start = time.perf_counter()
    days = os.listdir(history)
    commits = 0
    for day in days:
        commits += len(os.listdir(os.path.join(history, day)))
    return {"seconds": time.perf_counter() - start, "days": len(days), "commits": commits}


def op_ls(folder: str) -> dict:
    """listdir of one folder (`ls history/`)."""
    start = time.perf_counter()
    entries = os.listdir(folder)
    return {"seconds": time.perf_counter() - start, "entries": len(entries)}


def op_lsl(history: str) -> dict:
    """`ls -l` of every day: listdir and lstat of every commit folder."""
    start = time.perf_counter()
    days = os.listdir(history)
    commits = 0
    for day in days:
        folder = os.path.join(history, day)
        for name in os.listdir(folder):
            os.lstat(os.path.join(folder, name))
            commits += 1
    return {"seconds": time.perf_counter() - start, "days": len(days), "commits": commits}


def op_lsr(history: str) -> dict:
    """`ls -R` (with an lstat of every entry): os.walk of the whole tree."""
    start = time.perf_counter()
    entries = 0
    for top, dirs, files in os.walk(history):
        for name in dirs + files:
            os.lstat(os.path.join(top, name))
            entries += 1
    return {"seconds": time.perf_counter() - start, "entries": entries}


def op_sha256(path: str) -> dict:
    import hashlib
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return {"sha256": digest.hexdigest()}


def op_rtt(root: str) -> dict:
    """Mean seconds of one FUSE round trip: lstat of a missing name (never cached by the kernel here)."""
    missing, calls = os.path.join(root, "no-such-name"), 5000
    start = time.perf_counter()
    for _ in range(calls):
        try:
            os.lstat(missing)
        except FileNotFoundError:
            pass
    return {"seconds": (time.perf_counter() - start) / calls}


def op_versions(folder: str) -> dict:
    """listdir of MOUNTPOINT/.gitfs/versions/PATH: the versions of one file."""
    start = time.perf_counter()
    names = os.listdir(folder)
    return {"seconds": time.perf_counter() - start, "versions": len(names)}


def op_dirpair(history: str) -> dict:
    """Mean seconds of opening and closing a day folder (OPENDIR and RELEASEDIR, which
    libfuse answers without calling GitFS), over every day folder."""
    folders = [os.path.join(history, day) for day in os.listdir(history)]
    start = time.perf_counter()
    for folder in folders:
        os.close(os.open(folder, os.O_RDONLY | os.O_DIRECTORY))
    return {"seconds": (time.perf_counter() - start) / len(folders)}


def op_inflate(spec: str) -> dict:
    """Seconds libgit2 takes to inflate one blob (spec = REPO_PATH::BLOB_ID), with the
    settings the daemon uses: what GitFS must do before the first byte of a history/ file."""
    import pygit2  # GitFS's own dependency; only this floor figure needs it

    repo_path, blob = spec.split("::")
    pygit2.option(pygit2.enums.Option.ENABLE_STRICT_HASH_VERIFICATION, False)
    repo = pygit2.Repository(repo_path)
    start = time.perf_counter()
    found = repo[blob]  # the lookup inflates the whole object
    size = found.size if isinstance(found, pygit2.Blob) else 0
    return {"seconds": time.perf_counter() - start, "size": size}


def op_read_blobs(spec: str) -> dict:
    """Seconds libgit2 takes to read, once each, the blobs a cold run reads through a commit
    folder, in the order of a walk of it, with the daemon's own libgit2 settings, in a
    fresh process. spec = REPO_PATH::COMMIT: every blob (grep -r, cp -a);
    REPO_PATH::COMMIT::OTHER: both blobs of each path the two commits hold at one size
    (what diff -rq compares byte by byte; it tells files of two sizes apart unread)."""
    import pygit2

    sys.path.insert(0, ROOT)
    from gitfs.repo import libgit2
    from gitfs.repo.credentials import Credentials

    repo_path, *commits = spec.split("::")
    libgit2.configure(Credentials(), repo_path)
    repo = pygit2.Repository(repo_path)
    files = (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)

    def walk(tree, prefix=""):
        for entry in tree:
            if entry.filemode == pygit2.GIT_FILEMODE_TREE:
                yield from walk(repo[entry.id], f"{prefix}{entry.name}/")
            elif entry.filemode in files:
                yield f"{prefix}{entry.name}", entry.id

    first = repo.revparse_single(commits[0]).tree
    if len(commits) == 1:
        blobs = [oid for _path, oid in walk(first)]
    else:
        other = repo.revparse_single(commits[1]).tree
        blobs = []
        for path, oid in walk(first):
            try:
                theirs = other[path].id
            except KeyError:
                continue
            if repo.odb.read_header(oid)[1] == repo.odb.read_header(theirs)[1]:
                blobs += [oid, theirs]
    start = time.perf_counter()
    for oid in blobs:
        repo[oid].data  # noqa: B018 - the read is the point
    return {"seconds": time.perf_counter() - start, "blobs": len(blobs)}


OPS = {"dirpair": op_dirpair, "inflate": op_inflate, "read_blobs": op_read_blobs, "rtt": op_rtt, "list": op_list,
       "ls": op_ls, "lsl": op_lsl, "lsr": op_lsr, "sha256": op_sha256, "versions": op_versions}


def run_op(name: str, path: str, timeout: float = OP_TIMEOUT) -> dict:
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--op", name, path],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{name} {path} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout)


# -- helpers ---------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="gitfs-bench-")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.env = dict(os.environ)
        self.env.update({
            "HOME": self.home, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.path.join(self.home, ".gitconfig"),
            "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
            "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        })
        self.rows: list[tuple[str, str, str, str, str]] = []
        self.notes: list[str] = []
        self.problems: list[str] = []
        self.mounts: list[Mount] = []
        self.rclone_mounts: list = []  # RcloneMount
        self.can_drop = self._try_drop_caches()

    # shell-ish
    def git(self, *args, cwd=None, stdin=None, capture=True) -> str:
        result = subprocess.run(["git", *args], cwd=cwd, input=stdin, env=self.env,
                                stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(map(str, args[:3]))} failed: {result.stderr.decode(errors='replace')}")
        return result.stdout.decode() if capture else ""

    def sh(self, command: str, timeout: float = OP_TIMEOUT) -> float:
        """Wall time of a shell command (stdout to /dev/null unless redirected)."""
        start = time.perf_counter()
        result = subprocess.run(["bash", "-c", command], env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=timeout)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise RuntimeError(f"{command!r} failed: {result.stderr.decode(errors='replace').strip()}")
        return elapsed

    def path(self, *parts) -> str:
        return os.path.join(self.tmp, *parts)

    @staticmethod
    def _try_drop_caches() -> bool:
        try:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as handle:
                handle.write("3\n")
            return True
        except OSError:
            return False

    def drop_caches(self) -> None:
        if self.can_drop:
            self._try_drop_caches()

    def cache_word(self) -> str:
        return "cold cache" if self.can_drop else "warm: cannot drop caches"

    def row(self, figure, gitfs, baseline, ratio, target, ok: Optional[bool] = None, peer: str = "") -> None:
        """One line of the table; `ok` says whether the target is met (None: no target),
        `peer` is the rclone mount's figure for the same workload."""
        met = "" if ok is None else ("yes" if ok else "NO")
        self.rows.append((figure, gitfs, baseline, ratio, target, met, peer))
        print(f"  {figure}: {gitfs} | {baseline} | {ratio} | {target} | {met} | {peer}", flush=True)

    def problem(self, text: str) -> None:
        self.problems.append(text)
        print(f"  PROBLEM: {text}", flush=True)

    def cleanup(self) -> None:
        for mount in reversed(self.mounts):
            mount.unmount(quiet=True)
        for peer in list(self.rclone_mounts):
            peer.unmount()
        shutil.rmtree(self.tmp, ignore_errors=True)


def median_of(runs: int, measure: Callable[[], float], before: Optional[Callable[[], None]] = None) -> float:
    values = []
    for _ in range(runs):
        if before:
            before()
        values.append(measure())
    return statistics.median(values)


def secs(value: Optional[float]) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def mbps(value: float) -> str:
    return f"{value:.0f} MB/s"


def ratio_x(gitfs: Optional[float], base: Optional[float]) -> str:
    if gitfs is None or not base:
        return "—"
    return f"{gitfs / base:.2f}×"


def fmt_mb(kb: Optional[int]) -> str:
    return "—" if kb is None else f"{kb / 1024:.1f} MB"


# -- one GitFS mount ---------------------------------------------------------------

class Mount:
    def __init__(self, bench: Bench, remote: str, name: str, options: str = ""):
        self.bench = bench
        self.remote = remote
        self.name = name
        self.point = bench.path("mnt", name)
        self.repo_path = bench.path("clones", name)
        self.log = bench.path("logs", name + ".log")
        self.options = options
        self.pid: Optional[int] = None
        self.mounted = False
        for folder in (self.point, os.path.dirname(self.repo_path), os.path.dirname(self.log)):
            os.makedirs(folder, exist_ok=True)

    @property
    def current(self) -> str:
        return os.path.join(self.point, "current")

    @property
    def history(self) -> str:
        return os.path.join(self.point, "history")

    def mount(self) -> float:
        """Seconds until `gitfs` returns (the mount is ready)."""
        opts = f"repo_path={self.repo_path},log={self.log},log_level=warning"
        if self.options:
            opts += "," + self.options
        command = [sys.executable, "-m", "gitfs", self.remote, self.point, "-o", opts]
        self.bench.mounts.append(self)
        start = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, env=self.bench.env, capture_output=True, text=True,
                                timeout=300)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            self.bench.mounts.remove(self)
            raise RuntimeError(f"gitfs mount failed ({result.returncode}): {result.stderr.strip()}")
        self.mounted = True
        self.pid = self._find_daemon()
        return elapsed

    def _find_daemon(self) -> Optional[int]:
        """The daemon: a process whose argv holds `gitfs` and this mount point (like pgrep -f)."""
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\0")
            except OSError:
                continue
            if self.point.encode() in argv and b"gitfs" in argv:
                return int(entry)
        return None

    def cpu_seconds(self) -> Optional[float]:
        """User + system CPU time the daemon has used so far (a figure the machine's load barely moves)."""
        if self.pid is None:
            return None
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self, key: str = "VmRSS") -> Optional[int]:
        """VmRSS (or VmHWM, the peak) of the daemon in kB."""
        if self.pid is None:
            return None
        try:
            with open(f"/proc/{self.pid}/status") as handle:
                for line in handle:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def _alive(self) -> bool:
        if self.pid is None:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                return handle.read().split(") ")[-1][:1] != "Z"
        except OSError:
            return False

    def _abort_connection(self) -> None:
        """Last resort for a hung mount: abort its FUSE connection (by device number)."""
        try:
            with open("/proc/self/mountinfo") as handle:
                for line in handle:
                    fields = line.split()
                    if fields[4] == self.point:
                        minor = fields[2].split(":")[1]
                        with open(f"/sys/fs/fuse/connections/{minor}/abort", "w") as abort:
                            abort.write("1")
        except OSError:
            pass

    def unmount(self, quiet: bool = False, timeout: float = 60.0) -> None:
        if not self.mounted:
            return
        self.mounted = False
        if self in self.bench.mounts:
            self.bench.mounts.remove(self)
        fusermount = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"
        result = subprocess.run([fusermount, "-u", self.point], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            if not quiet:
                self.bench.problem(f"fusermount -u {self.name}: {result.stderr.strip()}")
            self._abort_connection()
            subprocess.run([fusermount, "-u", "-z", self.point], capture_output=True, timeout=60)
        deadline = time.monotonic() + timeout
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._alive():
            if not quiet:
                self.bench.problem(f"daemon of {self.name} (pid {self.pid}) still alive {timeout:.0f} s "
                                   "after unmount: killed")
            os.kill(self.pid, signal.SIGKILL)
        self.check_log()

    def check_log(self) -> None:
        try:
            with open(self.log, errors="replace") as handle:
                text = handle.read()
        except OSError:
            return
        if "Traceback" in text or " ERROR " in text or "CRITICAL" in text:
            lines = [line for line in text.splitlines() if line.strip()]
            self.bench.problem(f"the {self.name} daemon logged errors; last lines: " + " / ".join(lines[-4:]))


# -- remotes ------------------------------------------------------------------------

def commit_stamps(rng: random.Random, commits: int, shape: str) -> list[int]:
    """Committer times of `commits` commits, oldest first, ending about now.

    "long": over LONG_DAYS days (fewer for a small count, more for a big one, never
    before 1977), every day with one to eight commits (more where the count asks);
    "short": over DAYS days, about 10 % of them without a commit, the others a
    log-normal share."""
    now = int(time.time())
    if shape == "long":
        days = min(max(commits // 4, 1), 18000) if commits != 17000 else LONG_DAYS
        most = max(8, -(-2 * commits // days))
        per_day = [1] * days
        open_days = list(range(days))
        for _ in range(commits - days):
            while True:
                day = rng.choice(open_days)
                if per_day[day] < most:
                    break
            per_day[day] += 1
        first_day = (now - days * 86400) // 86400 * 86400
        stamps = [first_day + day * 86400 + rng.randrange(86400) for day in range(days) for _ in range(per_day[day])]
    else:
        first_day = (now - DAYS * 86400) // 86400 * 86400
        weights = [0.0 if rng.random() < 0.1 else rng.lognormvariate(0, 1) for _ in range(DAYS)]
        day_of_commit = sorted(rng.choices(range(DAYS), weights=weights, k=commits - 1))
        stamps = [first_day - 86400 + 43200]  # the initial commit, the day before
        stamps += [first_day + day * 86400 + rng.randrange(86400) for day in day_of_commit]
    return sorted(stamps)


def generate_history_remote(bench: Bench, bare: str, commits: int, shape: str) -> tuple[float, int]:
    """N commits (see commit_stamps), each changing one of 12 files; (seconds, days with commits)."""
    rng = random.Random(1234)
    start_time = time.perf_counter()
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    stamps = commit_stamps(rng, commits, shape)
    names = [f"file{n:02d}.txt" for n in range(FILES_IN_TREE)]
    chunks = []
    versions = [0] * FILES_IN_TREE

    def blob(index: int) -> bytes:
        versions[index] += 1
        text = f"{names[index]} version {versions[index]}\n" + "lorem ipsum dolor sit amet\n" * (index + 1)
        return text.encode()

    for number, stamp in enumerate(stamps, 1):
        message = f"commit {number}\n".encode()
        chunks.append(b"commit refs/heads/%s\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\n"
                      b"data %d\n%s" % (BRANCH.encode(), number, stamp, len(message), message))
        changed = range(FILES_IN_TREE) if number == 1 else [rng.randrange(FILES_IN_TREE)]
        for index in changed:
            data = blob(index)
            chunks.append(b"M 100644 inline %s\ndata %d\n%s\n" % (names[index].encode(), len(data), data))
        chunks.append(b"\n")
    bench.git("fast-import", "--quiet", cwd=bare, stdin=b"".join(chunks), capture=False)
    elapsed = time.perf_counter() - start_time
    days = {time.strftime("%Y-%m-%d", time.localtime(stamp)) for stamp in stamps}
    return elapsed, len(days)


def make_files_remote(bench: Bench, bare: str, work: str) -> None:
    """big.bin (100 MB of random bytes) and tree/ (5,000 small files) in one commit."""
    bench.git("init", "-q", "-b", BRANCH, work)
    with open(os.path.join(work, "big.bin"), "wb") as handle:
        for _ in range(BIG_MB):
            handle.write(os.urandom(MB))
    rng = random.Random(99)
    per_dir = 100
    for number in range(SMALL_TREE_FILES):
        folder = os.path.join(work, "tree", f"d{number // per_dir:03d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{number:05d}.txt"), "wb") as handle:
            handle.write(rng.randbytes(rng.randrange(200, 4000)))
    bench.git("add", "-A", cwd=work)
    bench.git("commit", "-q", "-m", "big file and small tree", cwd=work)
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    bench.git("push", "-q", bare, BRANCH, cwd=work)


def make_small_remote(bench: Bench, bare: str, work: str) -> None:
    bench.git("init", "-q", "-b", BRANCH, work)
    with open(os.path.join(work, "README"), "w") as handle:
        handle.write("tar target\n")
    bench.git("add", "-A", cwd=work)
    bench.git("commit", "-q", "-m", "initial", cwd=work)
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    bench.git("push", "-q", bare, BRANCH, cwd=work)


def make_native_shape(root: str, layout: dict[str, list[str]], files_per_commit: int) -> None:
    """A directory tree on the native disk with history/'s shape (for ls -l / ls -R baselines)."""
    names = [f"file{n:02d}.txt" for n in range(files_per_commit)]
    for day, commits in layout.items():
        for commit in commits:
            folder = os.path.join(root, day, commit)
            os.makedirs(folder)
            for name in names:
                os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT, 0o444))


def history_layout(bench: Bench, bare: str) -> dict[str, list[str]]:
    """day -> commit folder names, from git itself (local time, committer time)."""
    layout: dict[str, list[str]] = {}
    for line in bench.git("--git-dir", bare, "log", "--format=%H %ct", BRANCH).splitlines():
        sha, stamp = line.split()
        local = time.localtime(int(stamp))
        layout.setdefault(time.strftime("%Y-%m-%d", local), []).append(
            time.strftime("%H-%M-%S-", local) + sha[:10])
    return layout


# -- the sections ----------------------------------------------------------------------

def bench_history(bench: Bench, commits: int, shape: str) -> None:
    tag = f"[{shape}] "
    print(f"{tag}[1] generating a remote with {commits} commits ({shape} history) ...", flush=True)
    bare = bench.path("remotes", f"history-{shape}.git")
    gen_seconds, day_count = generate_history_remote(bench, bare, commits, shape)
    bench.notes.append(f"{shape} history remote: {commits} commits on {day_count} days, {FILES_IN_TREE}-file tree, "
                       f"generated by git fast-import in {gen_seconds:.2f} s")
    layout = history_layout(bench, bare)
    expected_commits = sum(len(v) for v in layout.values())

    # 2. mount time vs git clone (3 fresh clones each); each mount also gives one cold listing.
    print(f"{tag}[2] mount time vs git clone; [3] cold listing after each mount ...", flush=True)
    runs = 3
    clone_times = []
    for run in range(runs):
        target = bench.path("clones", f"plain-{run}")
        start = time.perf_counter()
        bench.git("clone", "-q", bare, target, capture=False)
        clone_times.append(time.perf_counter() - start)
        shutil.rmtree(target)
    mount_times, cold_lists = [], []
    mount = None
    for run in range(runs):
        mount = Mount(bench, bare, f"history-{shape}-{run}", HISTORY_OPTIONS)
        mount_times.append(mount.mount())
        listed = run_op("list", mount.history)
        cold_lists.append(listed["seconds"])
        if (listed["days"], listed["commits"]) != (len(layout), expected_commits):
            bench.problem(f"history/ lists {listed['days']} days and {listed['commits']} commits; "
                          f"git says {len(layout)} and {expected_commits}")
        if run < runs - 1:
            mount.unmount()
            shutil.rmtree(mount.repo_path, ignore_errors=True)
    assert mount is not None
    clone_s, mount_s = statistics.median(clone_times), statistics.median(mount_times)
    bench.row(tag + "mount (fresh repo_path) vs git clone, median of 3", secs(mount_s), secs(clone_s),
              ratio_x(mount_s, clone_s), "≤ clone + 1 s", mount_s <= clone_s + 1)

    # 3. listing, cold (above) and warm, vs git log.
    gitlog = median_of(3, lambda: timed_git_log(bench, bare))
    rss_listing = mount.rss_kb()
    cold = statistics.median(cold_lists)
    warm = median_of(3, lambda: run_op("list", mount.history)["seconds"])
    bench.row(tag + f"list every day+commit dir, just after mounting, median of {runs}", secs(cold),
              f"{secs(gitlog)} git log", ratio_x(cold, gitlog), "≤ 3× git log", cold <= 3 * gitlog)
    bench.row(tag + "list every day+commit dir, warm, median of 3", secs(warm), f"{secs(gitlog)} git log",
              ratio_x(warm, gitlog), "≤ 1× git log", warm <= gitlog)
    rss_listing2 = mount.rss_kb()
    rtt = median_of(3, lambda: run_op("rtt", mount.point)["seconds"])
    rtt_native = median_of(3, lambda: run_op("rtt", bench.tmp)["seconds"])
    bench.row(tag + "one FUSE round trip (lstat of a missing name at /), mean", f"{rtt * 1e6:.0f} µs",
              f"{rtt_native * 1e6:.1f} µs native", ratio_x(rtt, rtt_native), "(the floor per call)")
    pair = median_of(3, lambda: run_op("dirpair", mount.history)["seconds"])
    days = len(layout)
    bench.row(tag + "OPENDIR + RELEASEDIR of a folder (libfuse alone, no Python), mean", f"{pair * 1e6:.0f} µs",
              "—", "—", "(the floor per folder)")
    # Listing a folder takes OPENDIR, READDIRPLUS (the entries), READDIRPLUS (the end), RELEASEDIR:
    # four round trips, two of them into Python, whatever GitFS does inside them.
    floor = days * (pair + 2 * rtt)
    bench.row(tag + f"floor of the listing: {days} folders × (OPENDIR+RELEASEDIR + 2 round trips)", secs(floor),
              f"{secs(gitlog)} git log", ratio_x(floor, gitlog), f"GitFS warm is {ratio_x(warm, floor)} of it")

    # 4. ls -l: listdir and lstat of every commit folder, vs git log and a native tree of the same shape.
    print(f"{tag}[4] ls -l of every commit folder ...", flush=True)
    native = bench.path(f"native-history-{shape}")
    start = time.perf_counter()
    make_native_shape(native, layout, FILES_IN_TREE)
    bench.notes.append(f"native tree of the {shape} history/'s shape ({expected_commits} × {FILES_IN_TREE} empty "
                       f"files) made in {time.perf_counter() - start:.1f} s for the ls -l / ls -R baselines (warm)")
    lsl_first = run_op("lsl", mount.history)["seconds"]
    lsl = median_of(3, lambda: run_op("lsl", mount.history)["seconds"])
    lsl_native = median_of(3, lambda: run_op("lsl", native)["seconds"])
    bench.row(tag + "list every day+commit dir with an lstat of each commit dir, first", secs(lsl_first),
              f"{secs(gitlog)} git log", ratio_x(lsl_first, gitlog), "≤ 1.5× git log", lsl_first <= 1.5 * gitlog)
    bench.row(tag + "the same again, median of 3", secs(lsl), f"{secs(gitlog)} git log",
              ratio_x(lsl, gitlog), "≤ 1.5× git log", lsl <= 1.5 * gitlog)
    bench.row(tag + "the same on a native tree of that shape, median of 3", secs(lsl), f"{secs(lsl_native)} native",
              ratio_x(lsl, lsl_native), "")
    rss_lsl = mount.rss_kb()

    # 5. ls -R: single runs (expensive); a second run for the memory figure.
    print(f"{tag}[5] ls -R history/ (single run) ...", flush=True)
    lsr = run_op("lsr", mount.history)
    lsr_native = run_op("lsr", native)
    expected_entries = len(layout) + expected_commits * (1 + FILES_IN_TREE)
    if lsr["entries"] != expected_entries:
        bench.problem(f"ls -R history/ saw {lsr['entries']} entries, expected {expected_entries}")
    bench.row(tag + f"ls -R history/ ({lsr['entries']} entries), single run", secs(lsr["seconds"]),
              f"{secs(lsr_native['seconds'])} native", ratio_x(lsr["seconds"], lsr_native["seconds"]),
              "≤ 10 s", lsr["seconds"] <= 10)
    rss_lsr = mount.rss_kb()
    second = None
    if lsr["seconds"] <= 90 or not bench.args.quick:
        print(f"{tag}[5] ls -R history/ again (memory growth) ...", flush=True)
        second = run_op("lsr", mount.history)
        bench.row(tag + "ls -R history/, second run", secs(second["seconds"]), f"{secs(lsr_native['seconds'])} native",
                  ratio_x(second["seconds"], lsr_native["seconds"]), "≤ 10 s", second["seconds"] <= 10)
    rss_lsr2 = mount.rss_kb()
    print(f"{tag}[6] waiting {IDLE_WAIT} s for the mount to be idle ...", flush=True)
    time.sleep(IDLE_WAIT)
    rss_idle = mount.rss_kb()

    # 6. memory of the daemon.
    bench.row(tag + "daemon RSS after the first listing", fmt_mb(rss_listing), "—", "—", "")
    bench.row(tag + "daemon RSS after 3 more listings", fmt_mb(rss_listing2), "—",
              growth(rss_listing2, rss_listing), "")
    bench.row(tag + "daemon RSS after ls -l ×4", fmt_mb(rss_lsl), "—", "—", "")
    bench.row(tag + "daemon RSS after ls -R history/", fmt_mb(rss_lsr), "—", "—", "≤ 80 MB",
              rss_lsr is not None and rss_lsr <= 80 * 1024)
    if second is not None:
        ok = rss_lsr2 is not None and rss_lsr is not None and rss_lsr2 <= rss_lsr * 1.05 + 2048
        bench.row(tag + "daemon RSS after a second ls -R", fmt_mb(rss_lsr2), "—", growth(rss_lsr2, rss_lsr),
                  "flat (≤ +5 % +2 MB)", ok)
    # What stays: libfuse's node for each name the kernel still caches (~38 MB here).
    bench.row(tag + "daemon RSS once idle (libgit2's caches given back)", fmt_mb(rss_idle), "—",
              growth(rss_idle, rss_lsr2), "≤ 80 MB", rss_idle is not None and rss_idle <= 80 * 1024)
    bench.row(tag + "daemon peak RSS (VmHWM) over the history figures", fmt_mb(mount.rss_kb("VmHWM")), "—", "—", "")
    bench_versions(bench, mount, bare, tag)
    mount.unmount()
    shutil.rmtree(native, ignore_errors=True)


def bench_versions(bench: Bench, mount: Mount, bare: str, tag: str) -> None:
    """[6b] .gitfs/versions/FILE of one file vs `git log --format=%H -- FILE` on the same history."""
    print("[6b] versions of one file vs git log -- FILE ...", flush=True)
    for number, name in enumerate(("file03.txt", "file07.txt")):
        def gitlog(name: str = name) -> float:
            start = time.perf_counter()
            bench.git("--git-dir", bare, "log", "--format=%H", BRANCH, "--", name)
            return time.perf_counter() - start
        baseline = median_of(3, gitlog)
        expected = len(bench.git("--git-dir", bare, "log", "--format=%H", BRANCH, "--", name).split())
        listed = run_op("versions", os.path.join(mount.point, ".gitfs", "versions", name))
        if listed["versions"] != expected:
            bench.problem(f".gitfs/versions/{name} lists {listed['versions']} versions; git log says {expected}")
        what = "first file, cold (reads the branch)" if number == 0 else "second file (branch known)"
        bench.row(tag + f"list the {expected} versions of {name}, {what}", secs(listed["seconds"]),
                  f"{secs(baseline)} git log", ratio_x(listed["seconds"], baseline), "≤ 2× git log",
                  listed["seconds"] <= 2 * baseline)


def bench_scale(bench: Bench, counts: list[int]) -> None:
    """Mount time, listing time and RSS for long histories of each size (not for CI)."""
    for commits in counts:
        scale_one(bench, commits)


def scale_one(bench: Bench, commits: int) -> None:
    """One long history: mount time vs a bare clone, listing time vs git log, RSS."""
    tag = f"[long, {commits} commits] "
    print(f"{tag}generating ...", flush=True)
    bare = bench.path("remotes", f"scale-{commits}.git")
    gen_seconds, day_count = generate_history_remote(bench, bare, commits, "long")
    bench.notes.append(f"scale: {commits} commits on {day_count} days, generated in {gen_seconds:.1f} s")
    start = time.perf_counter()
    bench.git("clone", "-q", "--bare", bare, bench.path("clones", f"scale-plain-{commits}"), capture=False)
    clone_s = time.perf_counter() - start
    shutil.rmtree(bench.path("clones", f"scale-plain-{commits}"))
    gitlog = median_of(3, lambda: timed_git_log(bench, bare))
    mount = Mount(bench, bare, f"scale-{commits}")
    mount_s = mount.mount()
    bench.row(tag + "mount (fresh repo_path) vs git clone", secs(mount_s), secs(clone_s),
              ratio_x(mount_s, clone_s), "")
    # `ls history/` alone first: the index of every commit, and the days' folders only.
    rss_mounted = mount.rss_kb()
    days_listed = run_op("ls", mount.history)
    if days_listed["entries"] != day_count:
        bench.problem(f"history/ lists {days_listed['entries']} days; git says {day_count}")
    bench.row(tag + "ls history/, just after mounting", secs(days_listed["seconds"]), f"{secs(gitlog)} git log",
              ratio_x(days_listed["seconds"], gitlog), "≤ 2× git log", days_listed["seconds"] <= 2 * gitlog)
    memory_row(bench, tag + "daemon RSS after ls history/", mount, rss_mounted, commits)
    # Then every day folder, on a fresh mount of the same clone (a cold index again).
    mount.unmount()
    mount.mount()
    rss_mounted = mount.rss_kb()
    cpu_before = mount.cpu_seconds()
    cold = run_op("list", mount.history)
    cpu_cold = mount.cpu_seconds()
    warm = median_of(3, lambda: run_op("list", mount.history)["seconds"])
    bench.row(tag + "list every day+commit dir, just after mounting", secs(cold["seconds"]),
              f"{secs(gitlog)} git log", ratio_x(cold["seconds"], gitlog), "≤ 3× git log",
              cold["seconds"] <= 3 * gitlog)
    bench.row(tag + "list every day+commit dir, warm, median of 3", secs(warm), f"{secs(gitlog)} git log",
              ratio_x(warm, gitlog), "≤ 1× git log", warm <= gitlog)
    if cpu_before is not None and cpu_cold is not None:
        bench.row(tag + "  daemon CPU time for the first listing", secs(cpu_cold - cpu_before), "—", "—", "")
    # Every commit folder listed with its attributes (READDIRPLUS) is a node in libfuse's
    # high-level table until the kernel forgets the entry: no target, the floor is libfuse's.
    memory_row(bench, tag + "daemon RSS after listing every day (a libfuse node per commit folder)", mount,
               rss_mounted, commits, target=False)
    # After the memory figure: the versions keep the branch's first-parent line.
    cpu_before = mount.cpu_seconds()
    bench_versions(bench, mount, bare, tag)
    cpu_after = mount.cpu_seconds()
    if cpu_before is not None and cpu_after is not None:
        bench.row(tag + "  daemon CPU time for both versions listings", secs(cpu_after - cpu_before), "—", "—", "")
    bench.row(tag + "daemon RSS after the versions", fmt_mb(mount.rss_kb()), "—", "—", "")
    mount.unmount()
    shutil.rmtree(mount.repo_path, ignore_errors=True)


def memory_row(bench: Bench, what: str, mount: Mount, rss_mounted: Optional[int], commits: int, *,
               target: bool = True) -> None:
    """The daemon's RSS, its growth per commit over RSS just mounted, and how much of it is
    file pages (the pack's pages libgit2 maps: the kernel's to reclaim, not the heap)."""
    rss, rss_file = mount.rss_kb(), mount.rss_kb("RssFile")
    per_commit = (rss - rss_mounted) * 1024 / commits if rss is not None and rss_mounted is not None else None
    files = "" if rss_file is None else f" ({fmt_mb(rss_file)} of it file pages)"
    bench.row(what + ", and per commit over RSS just mounted", fmt_mb(rss) + files,
              fmt_mb(rss_mounted) + " mounted", "—" if per_commit is None else f"{per_commit:.0f} B/commit",
              "≤ 200 B/commit" if target else "", (per_commit is not None and per_commit <= 200) if target else None)


def growth(after: Optional[int], before: Optional[int]) -> str:
    if after is None or before is None:
        return "—"
    return f"{(after - before) / 1024:+.1f} MB"


def timed_git_log(bench: Bench, bare: str) -> float:
    start = time.perf_counter()
    result = subprocess.run(["git", "--git-dir", bare, "log", "--format=%H%ct", BRANCH], env=bench.env,
                            capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError("git log failed")
    return elapsed


class RcloneMount:
    """The peer for the current/ workloads: `rclone mount` of a local folder with
    `--vfs-cache-mode writes` (rclone's own local backend, no network)."""

    def __init__(self, bench: Bench, source: str, name: str):
        self.bench = bench
        self.source = source
        self.name = name
        self.point = bench.path("mnt", f"rclone-{name}")
        self.mounted = False
        os.makedirs(self.point, exist_ok=True)

    def mount(self) -> Optional[str]:
        """None once mounted, else why rclone could not mount."""
        rclone = shutil.which("rclone")
        if rclone is None:
            return "rclone is not installed (Debian package rclone)"
        config = self.bench.path("rclone.conf")
        open(config, "a").close()
        command = [rclone, "mount", self.source, self.point, "--vfs-cache-mode", "writes",
                   "--cache-dir", self.bench.path("rclone-cache", self.name), "--config", config, "--daemon"]
        result = subprocess.run(command, env=self.bench.env, capture_output=True, text=True, timeout=60)
        deadline = time.monotonic() + 20
        while not os.path.ismount(self.point) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not os.path.ismount(self.point):
            return f"rclone mount failed ({result.returncode}): {result.stderr.strip()[-200:]}"
        self.mounted = True
        self.bench.rclone_mounts.append(self)
        return None

    def unmount(self) -> None:
        if not self.mounted:
            return
        self.mounted = False
        self.bench.rclone_mounts.remove(self)
        fusermount = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"
        if subprocess.run([fusermount, "-u", self.point], capture_output=True).returncode != 0:
            subprocess.run([fusermount, "-u", "-z", self.point], capture_output=True)


def peer_mount(bench: Bench, source: str, name: str) -> Optional[RcloneMount]:
    peer = RcloneMount(bench, source, name)
    why = peer.mount()
    if why is not None:
        if why not in bench.notes:
            bench.notes.append(f"rclone column empty: {why}")
        return None
    return peer


def bench_files(bench: Bench) -> None:
    print(f"[7] making a remote with a {BIG_MB} MiB file and {SMALL_TREE_FILES} small files ...", flush=True)
    bare, work = bench.path("remotes", "files.git"), bench.path("files-work")
    make_files_remote(bench, bare, work)
    mount = Mount(bench, bare, "files", "max_size=0,sync_timeout=1")  # the loose-object read writes 100 MiB
    mount.mount()
    peer_source = bench.path("rclone-files")
    shutil.copytree(work, peer_source, ignore=shutil.ignore_patterns(".git"))
    peer = peer_mount(bench, peer_source, "files")
    rss_start = mount.rss_kb()
    native_big = os.path.join(work, "big.bin")
    size_mb = os.path.getsize(native_big) / MB
    blob = bench.git("-C", mount.repo_path, "rev-parse", f"{BRANCH}:big.bin").strip()
    day = sorted(os.listdir(mount.history))[-1]
    commit_dir = os.path.join(mount.history, day, sorted(os.listdir(os.path.join(mount.history, day)))[-1])
    history_big = os.path.join(commit_dir, "big.bin")
    current_big = os.path.join(mount.current, "big.bin")
    peer_big = os.path.join(peer.point, "big.bin") if peer else None
    cache = bench.cache_word()

    def cat(path: str) -> Callable[[], float]:
        return lambda: bench.sh(f"cat '{path}' > /dev/null")

    def peer_rate(before) -> str:
        if peer_big is None:
            return ""
        return mbps(size_mb / median_of(3, cat(peer_big), before))

    # from current/ vs cat on the native disk: after dropping caches, then from the page cache.
    native_s = median_of(3, cat(native_big), bench.drop_caches)
    current_s = median_of(3, cat(current_big), bench.drop_caches)
    bench.row(f"read {BIG_MB} MiB from current/ ({cache}), median of 3", mbps(size_mb / current_s),
              f"{mbps(size_mb / native_s)} cat native", f"{native_s / current_s:.0%}", "≥ 50 % of native",
              native_s / current_s >= 0.5, peer_rate(bench.drop_caches))
    bench.sh(f"cat '{native_big}' '{current_big}' > /dev/null")
    native_warm = median_of(3, cat(native_big))
    current_warm = median_of(3, cat(current_big))
    bench.row(f"read {BIG_MB} MiB from current/ again (page cache), median of 3", mbps(size_mb / current_warm),
              f"{mbps(size_mb / native_warm)} cat native, page cache", f"{native_warm / current_warm:.0%}",
              "≥ 50 % of native", native_warm / current_warm >= 0.5, peer_rate(None))
    # from history/ vs git cat-file: the blob as the clone got it (packed), then one GitFS committed (loose).
    first_s = history_first_read(bench, mount, history_big, blob, "packed")
    rss_history = mount.rss_kb()
    again_s = median_of(3, cat(history_big))
    bench.row("read it again from history/ (page cache), median of 3", mbps(size_mb / again_s),
              f"{mbps(size_mb / first_s)} first read", f"{first_s / again_s:.1f}×", "page cache",
              again_s < first_s / 2)
    loose_big, loose_blob = commit_through_current(bench, mount)
    history_first_read(bench, mount, loose_big, loose_blob, "loose")
    bench.row("daemon RSS after the history/ reads (files closed)", fmt_mb(mount.rss_kb()), "—",
              growth(mount.rss_kb(), rss_start), "")
    bench.row(f"daemon peak RSS (VmHWM) during the {BIG_MB} MiB reads, commit and push", fmt_mb(mount.rss_kb("VmHWM")),
              "—", "—", "")
    if rss_history is not None and rss_start is not None:
        bench.notes.append(f"files mount RSS: {fmt_mb(rss_start)} after mount, {fmt_mb(rss_history)} just after "
                           "the first history/ read of the big file")
    # correctness of what was read (outside the timings)
    want = run_op("sha256", native_big)["sha256"]
    for label, path in (("current/", current_big), ("history/", history_big)):
        if run_op("sha256", path)["sha256"] != want:
            bench.problem(f"{label}big.bin differs from the committed bytes")

    # 9. the 5,000-file tree: cat of every file, find -type f, ls -lR.
    print(f"[9] cat of every file, find -type f, ls -lR on {SMALL_TREE_FILES} files ...", flush=True)
    native_tree, gitfs_tree = os.path.join(work, "tree"), os.path.join(mount.current, "tree")
    peer_tree = os.path.join(peer.point, "tree") if peer else None
    # Round trips to GitFS that the kernel cannot spare, warm: OPEN and RELEASE per file
    # for cat (the pages and attributes are cached); per folder OPENDIR, two READDIRPLUS
    # (the entries, then the end) and RELEASEDIR for find and ls -lR.
    folders = SMALL_TREE_FILES // 100 + 1
    rtt = median_of(3, lambda: run_op("rtt", mount.point)["seconds"])
    workloads = (
        ("find current/ -type f | xargs cat", "find '{}' -type f | xargs cat > /dev/null", 5.0, True,
         (SMALL_TREE_FILES * 2, f"{SMALL_TREE_FILES} files × 2")),
        ("find current/ -type f", "find '{}' -type f > /dev/null", 1.5, False, (folders * 4, f"{folders} folders × 4")),
        ("ls -lR current/", "ls -lR '{}' > /dev/null", 1.5, False, (folders * 4, f"{folders} folders × 4")),
    )
    bench.row("one FUSE round trip on this mount (lstat of a missing name), mean", f"{rtt * 1e6:.0f} µs", "—", "—",
              "(the cost of one)")
    for label, command, target, cold_too, (round_trips, counted) in workloads:
        for state, before in (((cache, bench.drop_caches),) if cold_too else ()) + (("warm", None),):
            trees = [native_tree, gitfs_tree] + ([peer_tree] if peer_tree else [])
            if state == "warm":
                for tree in trees:
                    bench.sh(command.format(tree))
            def run_on(tree: str, command: str = command) -> Callable[[], float]:
                return lambda: bench.sh(command.format(tree))

            native_s = median_of(3, run_on(native_tree), before)
            gitfs_s = median_of(3, run_on(gitfs_tree), before)
            peer_s = median_of(3, run_on(peer_tree), before) if peer_tree else None
            met = gitfs_s <= target * native_s if state == "warm" else None
            bench.row(f"{label}, {SMALL_TREE_FILES} files ({state}), median of 3", secs(gitfs_s),
                      f"{secs(native_s)} native", ratio_x(gitfs_s, native_s),
                      f"≤ {target:g}× native" if state == "warm" else "", met,
                      "" if peer_s is None else f"{secs(peer_s)} ({ratio_x(peer_s, native_s)})")
            if state == "warm":
                floor = native_s + round_trips * rtt
                bench.row(f"  floor: native + {counted} round trips", secs(floor), f"{secs(native_s)} native",
                          ratio_x(floor, native_s), f"GitFS is {ratio_x(gitfs_s, floor)} of it")
    if peer:
        peer.unmount()
    mount.unmount()


TREE_FILES = 20000  # the per-file workloads: a project of TREE_FILES files in TREE_FILES / 20 folders
TREE_COMMITS = 2000  # ... and a history of TREE_COMMITS commits, each changing TREE_CHANGES files
TREE_CHANGES = 10
TREE_WORD = "quuxneedle"  # in about 2 % of the files


def generate_tree_remote(bench: Bench, bare: str, files: int, commits: int) -> float:
    """A project of `files` ~3 KB text files in files/20 folders, the first commit adding
    them all, each later one (an hour apart, ending now) changing TREE_CHANGES of them;
    seconds taken (git fast-import)."""
    rng = random.Random(2024)
    start = time.perf_counter()
    bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
             "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "magna", "aliqua"]
    paths = [f"src/m{number // 20:04d}/f{number:06d}.txt" for number in range(files)]

    def content(number: int, version: int) -> bytes:
        lines = [f"{paths[number]} version {version}"]
        lines += [" ".join(rng.choices(words, k=12)) for _ in range(36)]
        if rng.random() < 0.02:
            lines.insert(rng.randrange(1, len(lines)), f"the {TREE_WORD} is here")
        return ("\n".join(lines) + "\n").encode()

    now = int(time.time())
    chunks = []
    for number in range(1, commits + 1):
        stamp = now - (commits - number) * 3600
        message = f"commit {number}\n".encode()
        chunks.append(b"commit refs/heads/%s\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s"
                      % (BRANCH.encode(), stamp, len(message), message))
        changed = range(files) if number == 1 else rng.sample(range(files), TREE_CHANGES)
        for index in changed:
            data = content(index, number)
            chunks.append(b"M 100644 inline %s\ndata %d\n%s\n" % (paths[index].encode(), len(data), data))
        chunks.append(b"\n")
    bench.git("fast-import", "--quiet", cwd=bare, stdin=b"".join(chunks), capture=False)
    return time.perf_counter() - start


def count_round_trips(mount: Mount, command: str, bench: Bench) -> Optional[int]:
    """Replies the daemon writes to /dev/fuse (libfuse answers each request with one writev)
    while `command` runs, counted by strace on every thread of the daemon; None without strace."""
    strace = shutil.which("strace")
    if strace is None or mount.pid is None:
        return None
    out = bench.path("strace.txt")
    tracer = subprocess.Popen([strace, "-f", "-c", "-e", "trace=writev", "-o", out, "-p", str(mount.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached to every thread
    try:
        bench.sh(command)
    finally:
        time.sleep(0.3)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=60)
    with open(out) as handle:
        for line in handle:
            fields = line.split()
            if fields and fields[-1] == "writev":
                return int(fields[3])
    return 0


def bench_tree(bench: Bench, files: int, commits: int) -> None:
    """The per-file workloads of a big project, in current/ and in commit folders of
    history/, each cold (first time after mounting, page caches dropped where we can)
    and warm (again), beside its git or native baseline, with the round trips the
    daemon answered per file and the floor they make (baseline + round trips × one
    round trip's mean)."""
    tag = f"[tree: {files} files, {commits} commits] "
    print(f"{tag}generating ...", flush=True)
    bare = bench.path("remotes", f"tree-{files}-{commits}.git")
    gen_s = generate_tree_remote(bench, bare, files, commits)
    bench.notes.append(f"tree remote: {files} files in {files // 20} folders, {commits} commits of {TREE_CHANGES} "
                       f"changed files each, generated in {gen_s:.1f} s")
    plain = bench.path(f"tree-plain-{files}")
    bench.git("clone", "-q", bare, plain, capture=False)
    ids = bench.git("-C", plain, "rev-list", "--reverse", BRANCH).split()
    old, new = ids[len(ids) // 2], ids[-1]
    natives = {}
    for sha in (old, new):
        natives[sha] = bench.path(f"tree-native-{sha[:10]}")
        os.makedirs(natives[sha])
        bench.sh(f"git -C '{plain}' archive {sha} | tar x -C '{natives[sha]}'")
    mount = Mount(bench, bare, f"tree-{files}")
    mount.mount()

    def folder_of(sha: str) -> str:
        stamp = int(bench.git("-C", plain, "log", "-1", "--format=%ct", sha))
        local = time.localtime(stamp)
        return os.path.join(mount.history, time.strftime("%Y-%m-%d", local),
                            time.strftime("%H-%M-%S-", local) + sha[:10])

    old_dir, new_dir = folder_of(old), folder_of(new)
    copy_to = bench.path("tree-copy")
    ok_1 = "; test $? -le 1"  # grep without a match and diff with differences exit 1
    # (label, command, baseline, baseline's name, the commit folders a cold run reads: read_blobs)
    workloads = (
        ("grep -rl WORD in current/", f"grep -rl {TREE_WORD} '{mount.current}' > /dev/null{ok_1}",
         f"grep -rl --exclude-dir=.git {TREE_WORD} '{plain}' > /dev/null{ok_1}", "grep on the clone's tree", ()),
        ("grep -rl WORD in a commit folder", f"grep -rl {TREE_WORD} '{old_dir}' > /dev/null{ok_1}",
         f"git -C '{plain}' grep -l {TREE_WORD} {old} > /dev/null{ok_1}", "git grep -l", (old,)),
        ("diff -rq of two commit folders", f"diff -rq '{old_dir}' '{new_dir}' > /dev/null{ok_1}",
         f"diff -rq '{natives[old]}' '{natives[new]}' > /dev/null{ok_1}", "diff -rq on disk", (old, new)),
        ("cp -a of a commit folder", f"rm -rf '{copy_to}'; cp -a '{old_dir}' '{copy_to}'",
         f"rm -rf '{copy_to}'; mkdir '{copy_to}'; git -C '{plain}' archive {old} | tar x -C '{copy_to}'",
         "git archive | tar x", (old,)),
        ("find -type f in current/", f"find '{mount.current}' -type f > /dev/null",
         f"find '{natives[new]}' -type f > /dev/null", "find native", ()),
    )
    rtt = median_of(3, lambda: run_op("rtt", mount.point)["seconds"])
    bench.row(tag + "one FUSE round trip on this mount (lstat of a missing name), mean", f"{rtt * 1e6:.0f} µs",
              "—", "—", "(the cost of one)")
    # A cold read of a commit folder's files is libgit2's: it resolves each blob's delta
    # chain, keeping at most 16 MiB of bases (git keeps 96 MiB), so a chain is inflated
    # again where git finds its base kept. A floor of this design (pygit2 reads the objects).
    reads = {}
    for commits in ((old,), (old, new)):
        bench.drop_caches()
        reads[commits] = run_op("read_blobs", "::".join((mount.repo_path, *commits)))["seconds"]
    bench.drop_caches()
    cat_file = bench.sh(f"git -C '{plain}' ls-tree -r {old} | awk '{{print $3}}' | "
                        f"git -C '{plain}' cat-file --batch > /dev/null")
    bench.row(tag + "libgit2 reads every blob of a commit once (fresh process, cold)", secs(reads[(old,)]),
              f"{secs(cat_file)} git cat-file --batch", ratio_x(reads[(old,)], cat_file), "(in the cold floors below)")
    bench.row(tag + "libgit2 reads the blobs diff -rq compares (both of each pair of one size)",
              secs(reads[(old, new)]), "—", "—", "(in the cold floors below)")
    count = getattr(bench.args, "count_round_trips", False)
    for label, command, baseline, base_label, read_commits in workloads:
        print(f"{tag}{label} ...", flush=True)
        # cold: a fresh mount of the same clone, caches dropped
        mount.unmount()
        mount.mount()
        bench.drop_caches()
        cold = bench.sh(command)
        bench.drop_caches()
        base_cold = bench.sh(baseline)
        bench.row(tag + f"{label}, cold, single run", secs(cold), f"{secs(base_cold)} {base_label}",
                  ratio_x(cold, base_cold), "")
        bench.sh(baseline)
        warm = median_of(3, functools.partial(bench.sh, command))
        base_warm = median_of(3, functools.partial(bench.sh, baseline))
        bench.row(tag + f"{label}, warm, median of 3", secs(warm), f"{secs(base_warm)} {base_label}",
                  ratio_x(warm, base_warm), "")
        if count:
            trips = {}
            mount.unmount()
            mount.mount()
            bench.drop_caches()
            trips["cold"] = count_round_trips(mount, command, bench)
            trips["warm"] = count_round_trips(mount, command, bench)
            for state, base_s, gitfs_s in (("cold", base_cold, cold), ("warm", base_warm, warm)):
                found = trips[state]
                if found is None:
                    continue
                floor = base_s + found * rtt
                parts = f"{base_label} + them"
                if state == "cold" and read_commits:  # warm, the kernel keeps the pages
                    floor += reads[read_commits]
                    parts += " + libgit2's reads"
                bench.row(tag + f"  {state}: {found} round trips ({found / files:.2f} per file); floor {parts}",
                          secs(floor), f"{secs(base_s)} {base_label}",
                          ratio_x(floor, base_s), f"GitFS is {ratio_x(gitfs_s, floor)} of it")
    rss = mount.rss_kb()
    bench.row(tag + "daemon RSS after these", fmt_mb(rss), "—", "—", "")
    mount.unmount()
    for folder in (plain, copy_to, *natives.values()):
        shutil.rmtree(folder, ignore_errors=True)


def history_first_read(bench: Bench, mount: Mount, path: str, blob: str, stored: str) -> float:
    """First read of a big file from history/ (cold cache) vs `git cat-file blob` of the same
    object in the clone, and libgit2 inflating it whole (the floor of reading it through
    libgit2); the rows, and the seconds of the first read."""
    size_mb = os.path.getsize(path) / MB
    runs = 3 if bench.can_drop else 1  # without dropping caches only the first read is a first read
    catfile_s = median_of(3, lambda: bench.sh(f"git -C '{mount.repo_path}' cat-file blob {blob} > /dev/null"),
                          bench.drop_caches)
    cpu_before = mount.cpu_seconds()
    first_s = median_of(runs, lambda: bench.sh(f"cat '{path}' > /dev/null"), bench.drop_caches)
    cpu = (mount.cpu_seconds() - cpu_before) / runs if cpu_before is not None else None
    bench.row(f"read {BIG_MB} MiB from history/, first read, {stored} object ({bench.cache_word()}), "
              f"{'median of 3' if runs == 3 else 'single run'}", mbps(size_mb / first_s),
              f"{mbps(size_mb / catfile_s)} git cat-file", f"{catfile_s / first_s:.0%}", "≥ 50 % of cat-file",
              catfile_s / first_s >= 0.5)
    if cpu is not None:
        bench.row(f"  daemon CPU time for that read ({stored})", secs(cpu), "—", "—", "")
    bench.drop_caches()
    inflate_s = run_op("inflate", f"{mount.repo_path}::{blob}")["seconds"]
    bench.row(f"  floor of a read through libgit2: inflating the {stored} blob whole in one process, single run",
              secs(inflate_s), f"{secs(catfile_s)} git cat-file", f"{catfile_s / inflate_s:.0%}",
              f"GitFS's first read is {ratio_x(first_s, inflate_s)} of it")
    committed = subprocess.run(["git", "-C", mount.repo_path, "cat-file", "blob", blob], env=bench.env,
                               capture_output=True, check=True).stdout
    if run_op("sha256", path)["sha256"] != hashlib.sha256(committed).hexdigest():
        bench.problem(f"history/ {os.path.basename(path)} differs from the committed bytes")
    return first_s


def commit_through_current(bench: Bench, mount: Mount) -> tuple[str, str]:
    """Write BIG_MB MiB of new random bytes into current/ and wait until GitFS committed them
    (a loose object in the clone, as everything GitFS commits) and pushed them: libgit2's
    pack builder holds the whole object while it pushes (~+100 MB for 2-3 s here), which
    neither the read timed next nor the RSS row after it should count. The history/ path
    and blob id."""
    name = "loose.bin"
    with open(os.path.join(mount.current, name), "wb") as handle:
        for _ in range(BIG_MB):
            handle.write(os.urandom(MB))
    deadline = time.monotonic() + 300
    while True:
        found = subprocess.run(["git", "-C", mount.remote, "rev-parse", "--verify", "-q", f"{BRANCH}:{name}"],
                               env=bench.env, capture_output=True, text=True)
        if found.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"GitFS did not commit and push {name} within 300 s")
        time.sleep(0.2)
    blob = found.stdout.strip()
    if not os.path.exists(os.path.join(mount.repo_path, ".git", "objects", blob[:2], blob[2:])):
        bench.problem(f"{name} was committed but is not a loose object")
    day = sorted(os.listdir(mount.history))[-1]
    newest = sorted(os.listdir(os.path.join(mount.history, day)))[-1]
    return os.path.join(mount.history, day, newest, name), blob


def bench_tar(bench: Bench) -> None:
    print(f"[8] tar x of {TAR_FILES} files into current/ (sync_timeout=1) ...", flush=True)
    sync_timeout = 1.0
    bare, work = bench.path("remotes", "tar.git"), bench.path("tar-work")
    make_small_remote(bench, bare, work)
    source = bench.path("tar-source")
    rng = random.Random(7)
    wanted = set()
    for number in range(TAR_FILES):
        relative = f"unpacked/d{number // 100:02d}/file{number:04d}.txt"
        wanted.add(relative)
        full = os.path.join(source, relative)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(rng.randbytes(rng.randrange(100, 2000)).hex().encode())
    archive = bench.path("files.tar")
    subprocess.run(["tar", "cf", archive, "-C", source, "unpacked"], check=True)

    def native_once() -> float:
        target = bench.path("tar-native")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        return bench.sh(f"tar xf '{archive}' -C '{target}'")

    native_s = median_of(3, native_once)
    peer_text = ""
    peer_folder = bench.path("rclone-tar")
    os.makedirs(peer_folder)
    peer = peer_mount(bench, peer_folder, "tar")
    if peer is not None:
        peer_s = bench.sh(f"tar xf '{archive}' -C '{peer.point}'")
        peer_text = f"{secs(peer_s)} ({ratio_x(peer_s, native_s)})"
        peer.unmount()
    mount = Mount(bench, bare, "tar", f"sync_timeout={sync_timeout:g}")
    mount.mount()
    before = int(bench.git("--git-dir", bare, "rev-list", "--count", BRANCH))
    rtt = median_of(3, lambda: run_op("rtt", mount.point)["seconds"])
    tar_s = bench.sh(f"tar xf '{archive}' -C '{mount.current}'")
    written = time.perf_counter()
    on_remote = None
    deadline = written + 120
    while time.perf_counter() < deadline:
        listed = set(bench.git("--git-dir", bare, "ls-tree", "-r", "--name-only", BRANCH).splitlines())
        if wanted <= listed:
            on_remote = time.perf_counter() - written
            break
        time.sleep(0.05)
    # let the sync worker settle (any later commits count too)
    last_tip, stable_since = None, time.perf_counter()
    while time.perf_counter() - stable_since < sync_timeout + 2 and time.perf_counter() < deadline:
        tip = bench.git("--git-dir", bare, "rev-parse", BRANCH).strip()
        if tip != last_tip:
            last_tip, stable_since = tip, time.perf_counter()
        time.sleep(0.1)
    commits = int(bench.git("--git-dir", bare, "rev-list", "--count", BRANCH)) - before
    bench.row(f"tar x of {TAR_FILES} files into current/ (tar time; single run)", secs(tar_s),
              f"{secs(native_s)} native (median of 3)", ratio_x(tar_s, native_s), "≤ 10× native",
              tar_s <= 10 * native_s, peer_text)
    # Per file the kernel asks LOOKUP (the name is new), CREATE, WRITE, SETATTR for each of
    # fchown, fchmod and futimens, a GETATTR (the write made the size stale) and RELEASE;
    # libfuse's high-level API adds a getattr into GitFS after CREATE and every SETATTR.
    floor = native_s + TAR_FILES * TAR_ROUND_TRIPS * rtt
    bench.row(f"  floor: native + {TAR_FILES} files × {TAR_ROUND_TRIPS} round trips ({rtt * 1e6:.0f} µs each)",
              secs(floor), f"{secs(native_s)} native", ratio_x(floor, native_s),
              f"GitFS is {ratio_x(tar_s, floor)} of it")
    if on_remote is None:
        bench.problem(f"not every tar file reached the remote within {deadline - written:.0f} s")
    bench.row(f"  … until all {TAR_FILES} files are on the remote (from tar's end)", secs(on_remote), "—", "—",
              f"≤ {sync_timeout + 2:g} s", on_remote is not None and on_remote <= sync_timeout + 2)
    bench.row("  … commits created on the remote (one per quiet period)", str(commits), "—", "—", "≤ 3",
              0 < commits <= 3)
    mount.unmount()


# -- batches: a burst written into current/, until the remote has it ---------------------

BATCH_KINDS = ("small", "big", "sparse", "stress")


def write_batch(root: str, kind: str, quick: bool) -> None:
    """A seeded burst: 1,000 files of 4 KiB; 3 files of 60 MB of random bytes; 200 sparse
    files of 9.5 MB (a few random blocks); or an fsstress-like tree of 2,700 files up to 20
    folders deep, a third of them sparse (a tenth of each with --quick)."""
    rng = random.Random(f"batch/{kind}")
    scale = 10 if quick else 1
    os.makedirs(root, exist_ok=True)
    if kind == "small":
        for number in range(1000 // scale):
            folder = os.path.join(root, f"d{number % 20:02d}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"f{number:04d}"), "wb") as handle:
                handle.write(rng.randbytes(4096))
    elif kind == "big":
        for number in range(3):
            with open(os.path.join(root, f"big{number}"), "wb") as handle:
                for _ in range(60 // scale):
                    handle.write(rng.randbytes(MB))
    elif kind == "sparse":
        for number in range(200 // scale):
            with open(os.path.join(root, f"sparse{number:03d}"), "wb") as handle:
                for _ in range(rng.randint(1, 5)):
                    handle.seek(rng.randrange(9_500_000))
                    handle.write(rng.randbytes(rng.randint(1, 65536)))
                handle.truncate(9_500_000)
    else:
        for number in range(2700 // scale):
            folder = os.path.join(root, *(f"d{rng.randint(0, 3)}" for _ in range(rng.randint(0, 20))))
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"f{number}"), "wb") as handle:
                if rng.random() < 0.3:
                    handle.seek(rng.randrange(9_500_000))
                    handle.write(rng.randbytes(rng.randint(1, 20000)))
                    handle.truncate(rng.randrange(1_000_000, 9_500_000))
                else:
                    handle.write(rng.randbytes(rng.randint(0, 3000)))


def plain_git_batch(bench: Bench, kind: str) -> tuple[float, float]:
    """(git add -A && git commit, git push) of the same burst to a remote like GitFS's."""
    bare, work = bench.path("remotes", f"batch-{kind}-git.git"), bench.path(f"batch-{kind}-git")
    make_small_remote(bench, bare, work)
    bench.git("config", "gc.auto", "0", cwd=work)  # the commit's objects stay loose, as GitFS's
    write_batch(os.path.join(work, "burst"), kind, bench.args.quick)
    bench.drop_caches()
    commit_s = bench.sh(f"cd '{work}' && git add -A && git commit -q -m burst")
    push_s = bench.sh(f"cd '{work}' && git push -q '{bare}' {BRANCH}")
    return commit_s, push_s


def read_status_file(mount: Mount) -> Optional[dict]:
    try:
        with open(os.path.join(mount.point, ".gitfs", "status"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def bench_batches(bench: Bench) -> None:
    print("[11] batches: a burst into current/ (sync_timeout=1) until the remote has it, vs plain git ...", flush=True)
    sync_timeout = 1.0
    for kind in bench.args.batches.split(","):
        commit_s, push_s = plain_git_batch(bench, kind)
        bare, work = bench.path("remotes", f"batch-{kind}.git"), bench.path(f"batch-{kind}-work")
        make_small_remote(bench, bare, work)
        source = bench.path(f"batch-{kind}-source")
        write_batch(source, kind, bench.args.quick)
        mount = Mount(bench, bare, f"batch-{kind}", f"sync_timeout={sync_timeout:g},fetch_timeout=2,max_size=0")
        mount.mount()
        tip = bench.git("--git-dir", bare, "rev-parse", BRANCH).strip()
        copy_s = bench.sh(f"cp -a --sparse=always '{source}' '{mount.current}/burst'")
        written = time.perf_counter()
        committed = on_remote = None
        lied = 0.0  # seconds the status said nothing pending while the remote lacked the burst
        last = written
        activity: set[str] = set()
        deadline = written + 600
        while time.perf_counter() < deadline:
            state = read_status_file(mount)
            now = time.perf_counter()
            moved = bench.git("--git-dir", bare, "rev-parse", BRANCH).strip() != tip
            if state is not None:
                pending = state["pending"]
                in_progress = state.get("in_progress") or {}
                if in_progress.get("committing"):
                    activity.add("committing")
                if in_progress.get("pushing"):
                    activity.add("pushing")
                if committed is None and pending["commits_not_pushed"]:
                    committed = now - written
                nothing = not pending["commits_not_pushed"] and not pending["changes_not_committed"]
                if nothing and not moved:
                    lied += now - last
                if nothing and moved:
                    on_remote = now - written
                    break
            last = now
            time.sleep(0.05)
        peak_kb = mount.rss_kb("VmHWM")
        started_unmount = time.perf_counter()
        mount.unmount()
        unmount_s = time.perf_counter() - started_unmount
        git_s = commit_s + push_s
        if on_remote is None:
            bench.problem(f"batch {kind}: not on the remote within {deadline - written:.0f} s")
        bench.row(f"batch {kind}: on the remote, from the end of the copy (copy {secs(copy_s)})", secs(on_remote),
                  f"{secs(git_s)} git add+commit {secs(commit_s)} + push {secs(push_s)}",
                  ratio_x(on_remote, git_s), f"≤ 1.5× git + {sync_timeout:g} s",
                  on_remote is not None and on_remote <= 1.5 * git_s + sync_timeout)
        bench.row(f"  … committed (status: commits_not_pushed); status said {', '.join(sorted(activity)) or '—'}",
                  secs(committed), f"{secs(commit_s)} git add+commit", ratio_x(committed, commit_s), "—")
        bench.row("  … seconds the status said nothing pending before the remote had it", f"{lied:.1f} s", "—", "—",
                  "0 s", lied == 0)
        bench.row("  … daemon peak RSS; unmount time", fmt_mb(peak_kb), "—", "—", f"unmount {secs(unmount_s)}")


# -- main -----------------------------------------------------------------------------

def machine_lines() -> list[str]:
    version = subprocess.run([sys.executable, "-m", "gitfs", "--version"], cwd=ROOT, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=ROOT)).stdout.strip()

    def package(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "?")
    except OSError:
        pass
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return [
        f"{version or 'GitFS ?'} (mfusepy {package('mfusepy')}, pygit2 {package('pygit2')}, "
        f"Python {platform.python_version()}, {git_version})",
        f"machine: {os.cpu_count()} cores ({cpu}), kernel {platform.release()}, {platform.machine()}",
    ]


def print_table(rows) -> None:
    header = ("figure", "GitFS", "baseline", "ratio", "target", "met?", "rclone")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smaller run: the long history only, 3000 commits (750 days)")
    parser.add_argument("--histories", default=None,
                        help="comma-separated: long (17,000 commits over 4,250 days), short (17,000 over ~730 days); "
                             "default both (long with --quick)")
    parser.add_argument("--commits", type=int, help="commits in each generated history (17000; 3000 with --quick)")
    parser.add_argument("--scale", help="only mount time, listing time and RSS on long histories of these sizes, "
                                        "e.g. 17000,170000 (slow; not for CI)")
    parser.add_argument("--sections", default="history,files,tree,tar,batches",
                        help="comma-separated: history, files, tree, tar, batches")
    parser.add_argument("--tree", default=f"{TREE_FILES}:{TREE_COMMITS}",
                        help="FILES:COMMITS of the per-file workloads' project, comma-separated for several "
                             f"(default {TREE_FILES}:{TREE_COMMITS}; e.g. 20000:2000,100000:2000)")
    parser.add_argument("--batches", default=",".join(BATCH_KINDS),
                        help=f"comma-separated bursts of the batches section (default {','.join(BATCH_KINDS)})")
    parser.add_argument("--count-round-trips", action="store_true",
                        help="count the round trips of each per-file workload (strace on the daemon; slow)")
    parser.add_argument("--code", help="mount this checkout of GitFS instead of this one (to compare two versions)")
    parser.add_argument("--op", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.code:
        global ROOT
        ROOT = os.path.abspath(args.code)
    if args.op:
        print(json.dumps(OPS[args.op[0]](args.op[1])))
        return 0
    commits = args.commits or (3000 if args.quick else 17000)
    histories = (args.histories or ("long" if args.quick else "long,short")).split(",")
    sections: list[Callable[[], None]] = []
    bench_holder: list[Bench] = []
    if args.scale:
        counts = [int(count) for count in args.scale.split(",")]
        sections.append(lambda: bench_scale(bench_holder[0], counts))
        what = f"scale: long histories of {args.scale} commits"
    else:
        wanted = args.sections.split(",")
        if "history" in wanted:
            for shape in histories:
                sections.append(functools.partial(lambda shape: bench_history(bench_holder[0], commits, shape), shape))
        if "files" in wanted:
            sections.append(lambda: bench_files(bench_holder[0]))
        if "tree" in wanted:
            for shape in args.tree.split(","):
                files, tree_commits = (int(part) for part in shape.split(":"))
                sections.append(functools.partial(lambda f, c: bench_tree(bench_holder[0], f, c), files,
                                                  tree_commits))
        if "tar" in wanted:
            sections.append(lambda: bench_tar(bench_holder[0]))
        if "batches" in wanted:
            sections.append(lambda: bench_batches(bench_holder[0]))
        what = ", ".join(part for part in (
            f"histories: {', '.join(histories)}, {commits} commits each{' (--quick)' if args.quick else ''}"
            if "history" in wanted else "",
            f"project (files:commits): {args.tree}" if "tree" in wanted else "",
            f"batches{' (a tenth, --quick)' if args.quick else ''}" if "batches" in wanted else "") if part) \
            or "no sections"
    header = machine_lines()
    for line in header:
        print(line)
    started = time.perf_counter()
    bench = Bench(args)
    bench_holder.append(bench)
    status = 0
    try:
        for section in sections:
            try:
                section()
            except Exception as error:  # noqa: BLE001 - report, go on with the next section
                bench.problem(f"{type(error).__name__}: {error}")
                for mount in list(bench.mounts):
                    mount.unmount(quiet=True)
                status = 1
    finally:
        bench.cleanup()
    print()
    for line in header:
        print(line)
    caches = ("dropped (echo 3 > /proc/sys/vm/drop_caches) where marked cold" if bench.can_drop
              else "cannot drop page caches: every figure is warm")
    print(f"caches: {caches}; {what}")
    print()
    print_table(bench.rows)
    print()
    for note in bench.notes:
        print(f"note: {note}")
    for text in bench.problems:
        print(f"PROBLEM: {text}")
    print(f"total bench time {time.perf_counter() - started:.0f} s")
    return 1 if bench.problems else status


if __name__ == "__main__":
    sys.exit(main())
