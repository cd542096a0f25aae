"""The bench's shared parts: operations run on a mount in a child process (with a timeout,
so that a hung mount cannot hang the bench), the Bench (rows, notes, problems, temporary
folders, cleanup), GitFS and rclone mounts, and the table."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import resource
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


OP_TIMEOUT = 600.0  # seconds for one operation on a mount before it counts as hung


MB = 1 << 20


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


def op_versions_lsl(folder: str) -> dict:
    """`ls -l` of MOUNTPOINT/.gitfs/versions/PATH: listdir and lstat of every version."""
    start = time.perf_counter()
    names = os.listdir(folder)
    for name in names:
        os.lstat(os.path.join(folder, name))
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
       "ls": op_ls, "lsl": op_lsl, "lsr": op_lsr, "sha256": op_sha256, "versions": op_versions,
       "versions_lsl": op_versions_lsl}


def run_op(name: str, path: str, timeout: float = OP_TIMEOUT) -> dict:
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py")  # its --op runs OPS[name]
    result = subprocess.run([sys.executable, runner, "--op", name, path],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{name} {path} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout)


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


class Mount:
    def __init__(self, bench: Bench, remote: str, name: str, options: str = "", *,
                 open_files: Optional[int] = None, path: Optional[str] = None):
        """`open_files`: the daemon's limit, soft and hard (a systemd service's LimitNOFILE=);
        `path`: the PATH it runs with (one without git: a machine where git is not installed)."""
        self.bench = bench
        self.open_files = open_files
        self.path_variable = path
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

    def status(self) -> Optional[dict]:
        """MOUNTPOINT/.gitfs/status, parsed; None if it cannot be read now."""
        try:
            with open(os.path.join(self.point, ".gitfs", "status"), encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def mount(self) -> float:
        """Seconds until `gitfs` returns (the mount is ready)."""
        opts = f"repo_path={self.repo_path},log={self.log},log_level=warning"
        if self.options:
            opts += "," + self.options
        command = [sys.executable, "-m", "gitfs", self.remote, self.point, "-o", opts]
        self.bench.mounts.append(self)
        env = dict(self.bench.env, PATH=self.path_variable) if self.path_variable else self.bench.env
        limit = None if self.open_files is None else functools.partial(
            resource.setrlimit, resource.RLIMIT_NOFILE, (self.open_files, self.open_files))
        start = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                                preexec_fn=limit)
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

    def reset_peak(self) -> None:
        """Start VmHWM afresh (as root: /proc/PID/clear_refs), so that it gives one step's peak."""
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            pass

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


def make_native_shape(root: str, layout: dict[str, list[str]], files_per_commit: int) -> None:
    """A directory tree on the native disk with history/'s shape (for ls -l / ls -R baselines)."""
    names = [f"file{n:02d}.txt" for n in range(files_per_commit)]
    for day, commits in layout.items():
        for commit in commits:
            folder = os.path.join(root, day, commit)
            os.makedirs(folder)
            for name in names:
                os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT, 0o444))


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


def process_figures(pid: Optional[int], pack_dir: Optional[str] = None) -> dict[str, int]:
    """A daemon's open files, memory maps, threads, RSS and the anonymous part of it (kB: the
    heap, beside the file pages of what it maps) now, and with `pack_dir` the pages of the
    pack files there it maps (libgit2 maps a pack's index whole and its data in windows;
    they grow with the repository, not with the time a mount runs); {} once it is gone."""
    if pid is None:
        return {}
    try:
        figures = {"open files": len(os.listdir(f"/proc/{pid}/fd"))}
        with open(f"/proc/{pid}/maps") as maps:
            figures["maps"] = sum(1 for _ in maps)
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                names = {"VmRSS": "RSS kB", "RssAnon": "RSS anon kB", "Threads": "threads"}
                if key in names:
                    figures[names[key]] = int(value.split()[0])
        if pack_dir is not None:
            figures["RSS pack kB"] = _mapped_kb(pid, pack_dir.rstrip("/") + "/")
    except OSError:
        return {}
    return figures


def _mapped_kb(pid: int, folder: str) -> int:
    """The resident kB of the process's mappings of files in `folder` (/proc/PID/smaps)."""
    total, counting = 0, False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and fields[0][0] in "0123456789abcdef" and "-" in fields[0] and len(fields) >= 5:
                counting = len(fields) > 5 and fields[5].startswith(folder)
            elif counting and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def growth_per_hour(samples: list[tuple[float, int]]) -> float:
    """The slope of a least-squares line through (seconds, kB) samples, in kB an hour: one
    sample's noise (a tidying that had two packs mapped, a burst of the heap) moves the
    figure far less than it moves the difference of the two ends."""
    if len(samples) < 2:
        return float("nan")
    mean_t = sum(at for at, _ in samples) / len(samples)
    mean_v = sum(value for _, value in samples) / len(samples)
    spread = sum((at - mean_t) ** 2 for at, _ in samples)
    if spread == 0:
        return float("nan")
    return sum((at - mean_t) * (value - mean_v) for at, value in samples) / spread * 3600
