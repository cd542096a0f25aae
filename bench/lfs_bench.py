"""The lfs section: Git LFS beside plain git, on path remotes, in one run.

Reading: a remote whose tree holds 2,000 small files (1-4 KiB, 20 folders) in Git LFS
(pointers committed, the objects in the remote's own lfs/ folder, git-lfs's standalone
layout), and a second remote with the same files as plain blobs. Each is mounted (the
first mount clones, and for LFS copies every object into the clone's store and checks
it out); then, three rounds, each on a fresh mount of the same clone with the page
caches dropped and again warm: `ls -lR` of current/, `ls -lR` of the tip commit's folder
in history/ (where each LFS file's size is read from its pointer) and reading every
file of that folder (`find | xargs cat`).

Writing: 500 new files of 4 KiB written into current/ of the LFS mount, timed from the
first write until the remote's branch has them all (the .bin files' objects uploaded into
the remote's lfs/ folder before the branch is pushed), beside 500 .txt files (not in
LFS) written the same way into the same mount; three rounds, the two kinds taking turns.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Optional

from harness import BRANCH, OP_TIMEOUT, Bench, Mount, fmt_mb, ratio_x, secs

LFS_FILES = 2000  # files of the reading remotes, LFS and plain
LFS_FOLDERS = 20
LFS_WRITES = 500  # files of each written batch
WRITE_SIZE = 4096
ROUNDS = 3
SYNC_TIMEOUT = 1.0
LFS_ATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n"
POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"

# One child process writes a batch (a hung mount cannot hang the bench): COUNT new files of
# SIZE random bytes in FOLDER; prints the monotonic clock (system-wide on Linux) at the
# first open and after the last close, as JSON.
WRITER = """
import json, os, sys, time
folder, extension, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
contents = [os.urandom(size) for _ in range(count)]
first = time.monotonic()
os.mkdir(folder)
for number, data in enumerate(contents):
    with open(os.path.join(folder, f"f{number:04d}.{extension}"), "wb") as out:
        out.write(data)
print(json.dumps({"first": first, "last": time.monotonic()}))
"""


def make_lfs_remotes(bench: Bench, files: int) -> tuple[str, str, dict[str, tuple[int, str]]]:
    """Two bare remotes of the same files: one with them in Git LFS (pointers committed, the
    objects in REMOTE/lfs/objects/OID[0:2]/OID[2:4]/OID, written here as git-lfs's standalone
    transfer leaves them: no git-lfs needed), one with them as blobs. Their paths, and
    {path: (size, sha256)} of the files."""
    rng = random.Random(1729)
    contents = {}
    for number in range(files):
        path = f"data/d{number % LFS_FOLDERS:02d}/f{number:05d}.bin"
        contents[path] = rng.randbytes(rng.randrange(1024, 4097))
    expected = {path: (len(data), hashlib.sha256(data).hexdigest()) for path, data in contents.items()}
    remotes = {}
    for kind in ("lfs", "plain"):
        bare, work = bench.path("remotes", f"{kind}.git"), bench.path(f"{kind}-work")
        bench.git("init", "-q", "--bare", "-b", BRANCH, bare)
        bench.git("init", "-q", "-b", BRANCH, work)
        with open(os.path.join(work, "README"), "w") as handle:
            handle.write(f"{files} files, {'in Git LFS' if kind == 'lfs' else 'plain blobs'}\n")
        if kind == "lfs":
            with open(os.path.join(work, ".gitattributes"), "w") as handle:
                handle.write(LFS_ATTRIBUTES)
        for path, data in contents.items():
            full = os.path.join(work, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as handle:
                if kind == "plain":
                    handle.write(data)
                    continue
                size, oid = expected[path]
                handle.write(POINTER.format(oid=oid, size=size).encode())
            stored = os.path.join(bare, "lfs", "objects", oid[:2], oid[2:4], oid)
            os.makedirs(os.path.dirname(stored), exist_ok=True)
            with open(stored, "wb") as handle:
                handle.write(data)
        bench.git("add", "-A", cwd=work)
        bench.git("commit", "-q", "-m", f"{files} files", cwd=work)
        bench.git("push", "-q", bare, BRANCH, cwd=work)
        remotes[kind] = bare
    return remotes["lfs"], remotes["plain"], expected


def tip_folder(mount: Mount) -> str:
    """history/DAY/COMMIT of the newest commit."""
    day = sorted(os.listdir(mount.history))[-1]
    return os.path.join(mount.history, day, sorted(os.listdir(os.path.join(mount.history, day)))[-1])


def files_seen(folder: str) -> dict[str, tuple[int, str]]:
    """{path: (size, sha256)} of every file below folder, as `find` and `sha256sum` see them
    (sizes from lstat: in history/ of the LFS mount, read from the pointers)."""
    sizes = subprocess.run(["find", ".", "-type", "f", "-printf", "%s %P\\n"], cwd=folder, capture_output=True,
                           text=True, timeout=OP_TIMEOUT, check=True).stdout
    sums = subprocess.run("find . -type f -print0 | xargs -0 sha256sum", shell=True, cwd=folder,
                          capture_output=True, text=True, timeout=OP_TIMEOUT, check=True).stdout
    found = {}
    by_path = {}
    for line in sums.splitlines():
        digest, path = line.split(None, 1)
        by_path[path.removeprefix("./")] = digest
    for line in sizes.splitlines():
        size, path = line.split(" ", 1)
        found[path] = (int(size), by_path.get(path, ""))
    return found


def check_files(bench: Bench, label: str, folder: str, expected: dict[str, tuple[int, str]]) -> None:
    """The files below folder are those expected (sizes and bytes), outside the timings."""
    seen = {path: value for path, value in files_seen(folder).items() if path.startswith("data/")}
    if seen != expected:
        wrong = sorted(path for path in set(seen) | set(expected) if seen.get(path) != expected.get(path))
        bench.problem(f"lfs: {label}: {len(wrong)} files differ from what was committed "
                      f"(first {wrong[0]}: {seen.get(wrong[0])} instead of {expected.get(wrong[0])})")


def metrics(mount: Mount) -> dict[str, float]:
    """MOUNTPOINT/.gitfs/metrics as {name{labels}: value}."""
    try:
        with open(os.path.join(mount.point, ".gitfs", "metrics"), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _space, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def settle(bench: Bench, mount: Mount, bare: str, timeout: float = 120.0) -> None:
    """Until the mount has nothing pending nor under way and the remote's branch has not moved
    for SYNC_TIMEOUT s."""
    deadline = time.monotonic() + timeout
    last_tip, since = None, time.monotonic()
    while time.monotonic() < deadline:
        tip = bench.git("--git-dir", bare, "rev-parse", BRANCH).strip()
        if tip != last_tip:
            last_tip, since = tip, time.monotonic()
        state = mount.status()
        quiet = state is not None and not state["pending"]["commits_not_pushed"] \
            and not state["pending"]["changes_not_committed"] and not any((state.get("in_progress") or {}).values())
        if quiet and time.monotonic() - since >= SYNC_TIMEOUT:
            return
        time.sleep(0.1)
    bench.problem(f"lfs: the {mount.name} mount did not settle within {timeout:.0f} s")


def spread(values: list[float]) -> str:
    """The median, and the lowest and highest of the rounds."""
    if not values:
        return "—"
    if len(values) == 1:
        return secs(values[0])
    return f"{secs(statistics.median(values))} ({secs(min(values))}–{secs(max(values))})"


def median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def compare(bench: Bench, figure: str, lfs: list[float], plain: list[float], base_label: str = "plain") -> None:
    """A row: the LFS figure, the plain one, their ratio (medians; the rounds' range beside)."""
    bench.row(figure, spread(lfs), f"{spread(plain)} {base_label}", ratio_x(median(lfs), median(plain)), "")


def bench_lfs(bench: Bench, files: int = LFS_FILES, writes: int = LFS_WRITES) -> None:
    print(f"[lfs] making two remotes of {files} files of 1-4 KiB in {LFS_FOLDERS} folders, one with them "
          "in Git LFS ...", flush=True)
    lfs_bare, plain_bare, expected = make_lfs_remotes(bench, files)
    mounts = {"lfs": Mount(bench, lfs_bare, "lfs", f"sync_timeout={SYNC_TIMEOUT:g}"),
              "plain": Mount(bench, plain_bare, "lfs-plain", f"sync_timeout={SYNC_TIMEOUT:g}")}
    try:
        bench_lfs_reads(bench, mounts, files, expected)
        bench_lfs_writes(bench, mounts["lfs"], lfs_bare, writes)
    finally:
        for mount in mounts.values():
            mount.unmount(quiet=True)


def bench_lfs_reads(bench: Bench, mounts: dict[str, Mount], files: int, expected: dict[str, tuple[int, str]]) -> None:
    first_mount = {kind: mount.mount() for kind, mount in mounts.items()}
    downloaded = metrics(mounts["lfs"]).get('gitfs_lfs_objects_total{direction="download"}')
    if downloaded != files:
        bench.problem(f"lfs: the LFS mount downloaded {downloaded} objects at mount, not {files}")
    for kind, mount in mounts.items():  # outside the timings: what is read is what was committed
        check_files(bench, f"{kind} current/", mount.current, expected)
        check_files(bench, f"{kind} history/", tip_folder(mount), expected)
    bench.row(f"lfs: first mount: clone (LFS: {files} objects copied from the remote's lfs/ and checked out), "
              "single run", secs(first_mount["lfs"]), f"{secs(first_mount['plain'])} plain",
              ratio_x(first_mount["lfs"], first_mount["plain"]), "")
    workloads = (
        ("ls -lR current/", "ls -lR '{current}' > /dev/null"),
        ("ls -lR history/TIP/ (LFS sizes from the pointers)", "ls -lR '{tip}' > /dev/null"),
        ("read every file of history/TIP/ (find -print0, xargs -0 cat)",
         "find '{tip}' -type f -print0 | xargs -0 cat > /dev/null"),
    )
    remount: dict[str, list[float]] = {kind: [] for kind in mounts}
    timings: dict[tuple[str, str, str], list[float]] = {}
    cpu: dict[tuple[str, str, str], list[float]] = {}  # the daemon's CPU seconds (barely moved by the load)
    rss: dict[str, list[float]] = {kind: [] for kind in mounts}
    print(f"[lfs] {ROUNDS} rounds on fresh mounts of the same clones: ls -lR current/, ls -lR and cat of "
          "history/TIP/ ...", flush=True)
    for number in range(ROUNDS):
        kinds = list(mounts) if number % 2 == 0 else list(reversed(mounts))  # take turns at going first
        for kind in kinds:
            mount = mounts[kind]
            mount.unmount()
            remount[kind].append(mount.mount())
            places = {"current": mount.current, "tip": tip_folder(mount)}
            for label, command in workloads:
                bench.drop_caches()
                for state in ("cold", "warm"):
                    cpu_before = mount.cpu_seconds()
                    took = bench.sh(command.format(**places))
                    timings.setdefault((label, state, kind), []).append(took)
                    cpu_after = mount.cpu_seconds()
                    if cpu_before is not None and cpu_after is not None:
                        cpu.setdefault((label, state, kind), []).append(cpu_after - cpu_before)
            kb = mount.rss_kb()
            if kb is not None:
                rss[kind].append(kb)
        print(f"  round {number + 1}: " + "; ".join(
            f"{label.split(' (')[0]} {state} LFS {secs(timings[(label, state, 'lfs')][-1])} plain "
            f"{secs(timings[(label, state, 'plain')][-1])}" for label, _command in workloads for state in ("cold",)),
            flush=True)
    compare(bench, f"lfs: mount of the same clone again, median of {ROUNDS}", remount["lfs"], remount["plain"])
    for label, _command in workloads:
        for state, words in (("cold", f"fresh mount, {bench.cache_word()}"), ("warm", "again (warm)")):
            compare(bench, f"lfs: {label}, {files} files, {words}, median of {ROUNDS}",
                    timings[(label, state, "lfs")], timings[(label, state, "plain")])
            if "history" in label:
                compare(bench, f"lfs:   … the daemon's CPU time for it ({state})", cpu.get((label, state, "lfs"), []),
                        cpu.get((label, state, "plain"), []))
    lfs_rss, plain_rss = median(rss["lfs"]), median(rss["plain"])
    bench.row("lfs: daemon RSS after these reads, median", fmt_mb(None if lfs_rss is None else int(lfs_rss)),
              f"{fmt_mb(None if plain_rss is None else int(plain_rss))} plain",
              "—" if not lfs_rss or not plain_rss else f"{(lfs_rss - plain_rss) / 1024:+.1f} MB", "")
    mounts["plain"].unmount()


def write_batch(bench: Bench, mount: Mount, bare: str, folder: str, extension: str,
                count: int) -> dict[str, float]:
    """Write `count` files into current/FOLDER/ and wait until the remote's branch has them
    all: the writer's seconds, the seconds from its first write until they were on the
    remote, the daemon's commit and push seconds (its metrics), commits made. The mount has
    settled before (settle)."""
    before = metrics(mount)
    commits_before = int(bench.git("--git-dir", bare, "rev-list", "--count", BRANCH))
    result = subprocess.run([sys.executable, "-c", WRITER, os.path.join(mount.current, folder), extension,
                             str(count), str(WRITE_SIZE)], capture_output=True, text=True, timeout=OP_TIMEOUT)
    if result.returncode != 0:
        raise RuntimeError(f"writing {folder} failed: {result.stderr.strip()[-300:]}")
    clock = json.loads(result.stdout)
    on_remote = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        listed = bench.git("--git-dir", bare, "ls-tree", "--name-only", f"{BRANCH}:{folder}") \
            if subprocess.run(["git", "--git-dir", bare, "rev-parse", "-q", "--verify", f"{BRANCH}:{folder}"],
                              env=bench.env, capture_output=True).returncode == 0 else ""
        if sum(name.startswith("f") for name in listed.splitlines()) >= count:  # not GitFS's .keep
            on_remote = time.monotonic() - clock["first"]
            break
        time.sleep(0.05)
    if on_remote is None:
        raise RuntimeError(f"{folder}: not on the remote within 300 s")
    settle(bench, mount, bare)
    after = metrics(mount)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    return {"write": clock["last"] - clock["first"], "on_remote": on_remote,
            "commit": delta("gitfs_commit_duration_seconds_sum"), "push": delta("gitfs_push_duration_seconds_sum"),
            "commits": int(bench.git("--git-dir", bare, "rev-list", "--count", BRANCH)) - commits_before,
            "uploaded": delta('gitfs_lfs_objects_total{direction="upload"}')}


def check_pushed(bench: Bench, bare: str, folder: str, lfs: bool, count: int) -> None:
    """Outside the timings: the .bin files went up as pointers with their objects in the
    remote's lfs/, the .txt files as blobs of WRITE_SIZE bytes."""
    entries = [line.split() for line in bench.git("--git-dir", bare, "ls-tree", f"{BRANCH}:{folder}").splitlines()]
    blobs = [fields[2] for fields in entries if fields[3].startswith("f")]  # not GitFS's .keep
    batch = subprocess.run(["git", "--git-dir", bare, "cat-file", "--batch"],
                           input="".join(blob + "\n" for blob in blobs).encode(), capture_output=True,
                           env=bench.env, check=True).stdout
    bad = 0
    position = 0
    for _blob in blobs:
        header_end = batch.index(b"\n", position)
        size = int(batch[position:header_end].split()[2])
        data = batch[header_end + 1:header_end + 1 + size]
        position = header_end + 1 + size + 1
        if not lfs:
            bad += size != WRITE_SIZE
            continue
        oid = next((line.split(b":", 1)[1].decode() for line in data.splitlines() if line.startswith(b"oid sha256:")),
                   "")
        stored = os.path.join(bare, "lfs", "objects", oid[:2], oid[2:4], oid)
        bad += not oid or not os.path.isfile(stored) or os.path.getsize(stored) != WRITE_SIZE
    if len(blobs) != count or bad:
        bench.problem(f"lfs: {folder} on the remote: {len(blobs)} files, {bad} of them not "
                      f"{'pointers with their object' if lfs else f'{WRITE_SIZE}-byte blobs'}")


def bench_lfs_writes(bench: Bench, mount: Mount, bare: str, writes: int) -> None:
    print(f"[lfs] writes: {writes} new files of {WRITE_SIZE // 1024} KiB into current/ (sync_timeout="
          f"{SYNC_TIMEOUT:g}) until the remote has them, .bin (LFS) and .txt (plain), {ROUNDS} rounds ...",
          flush=True)
    results: dict[str, list[dict[str, float]]] = {"bin": [], "txt": []}
    settle(bench, mount, bare)  # then after each batch
    for number in range(ROUNDS):
        kinds = ("bin", "txt") if number % 2 == 0 else ("txt", "bin")
        for extension in kinds:
            folder = f"written-{number}-{extension}"
            found = write_batch(bench, mount, bare, folder, extension, writes)
            check_pushed(bench, bare, folder, extension == "bin", writes)
            if found["uploaded"] != (writes if extension == "bin" else 0):
                bench.problem(f"lfs: {folder}: {found['uploaded']:.0f} LFS objects uploaded")
            found["rest"] = found["on_remote"] - found["write"] - SYNC_TIMEOUT - found["commit"] - found["push"]
            results[extension].append(found)
            print(f"  round {number + 1} .{extension}: write {secs(found['write'])}, on the remote "
                  f"{secs(found['on_remote'])} (commit {secs(found['commit'])}, push {secs(found['push'])}, "
                  f"{found['commits']} commits)", flush=True)

    def values(extension: str, key: str) -> list[float]:
        return [found[key] for found in results[extension]]

    for key, figure in (
            ("write", f"write {writes} new files of {WRITE_SIZE // 1024} KiB into current/ (the writer's time)"),
            ("on_remote", "  … from the first write until the remote's branch has them all"),
            ("commit", "  … the daemon's commit time (metrics; the LFS hashing before it not counted)"),
            ("push", "  … the daemon's push time (metrics; LFS: the objects' upload, then git push)"),
            ("rest", "  … the rest: on the remote − writer − sync_timeout − commit − push (LFS: the hashing "
                     "into the store)")):
        compare(bench, f"lfs: {figure}, .bin in LFS vs .txt, median of {ROUNDS}", values("bin", key),
                values("txt", key), ".txt")
    bench.row(f"lfs:   … commits per batch, rounds 1–{ROUNDS}",
              ", ".join(str(int(v)) for v in values("bin", "commits")),
              ", ".join(str(int(v)) for v in values("txt", "commits")) + " .txt", "—", "")
    mount.unmount()
