"""The files section: a 100 MiB file read from current/ and history/ (packed and loose)
beside cat and git cat-file; cat, find and ls -lR of a 5,000-file tree beside a native
copy and an rclone mount."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import time
from typing import Callable

from harness import BRANCH, MB, Bench, Mount, fmt_mb, growth, mbps, median_of, peer_mount, ratio_x, run_op, secs

BIG_MB = 100  # MiB


SMALL_TREE_FILES = 5000


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

    # 8. writes, with the default options: no extended attributes, so the kernel asks for
    # no security.capability before each write(2) (with them: one round trip more per write).
    print("[8] writes of 80 MiB into current/ and the native disk ...", flush=True)
    write_rows(bench, mount, work, "")

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
    attribute_costs(bench, bare, work)


def write_rows(bench: Bench, mount: Mount, work: str, how: str) -> None:
    """80 MiB written with dd in 4 KiB and 128 KiB writes into current/ beside the native disk."""
    for block in (4096, 128 * 1024):
        count = 80 * MB // block

        def dd(folder: str, block: int = block, count: int = count) -> Callable[[], float]:
            return lambda: bench.sh(f"dd if=/dev/zero of='{folder}/dd.bin' bs={block} count={count} "
                                    "conv=notrunc status=none")

        native_s = median_of(3, dd(work))
        gitfs_s = median_of(3, dd(mount.current))
        bench.row(f"write 80 MiB into current/{how} in {block // 1024} KiB writes (dd), median of 3",
                  mbps(80 / gitfs_s), f"{mbps(80 / native_s)} native", f"{native_s / gitfs_s:.0%}", "")
    for folder in (work, mount.current):
        os.unlink(os.path.join(folder, "dd.bin"))


def attribute_costs(bench: Bench, bare: str, work: str) -> None:
    """What `-o xattr` costs: with attributes the kernel asks the daemon for security.capability
    before every write(2) and `ls -l` for each entry's security.selinux (and ACL), a round
    trip each, which an answer of ENODATA does not spare."""
    print("[9b] the same writes and ls -lR on a mount with -o xattr ...", flush=True)
    mount = Mount(bench, bare, "files-xattr", "max_size=0,sync_timeout=1,xattr")
    mount.mount()
    write_rows(bench, mount, work, " with -o xattr")
    native_tree, gitfs_tree = os.path.join(work, "tree"), os.path.join(mount.current, "tree")
    for tree in (native_tree, gitfs_tree):
        bench.sh(f"ls -lR '{tree}' > /dev/null")
    native_s = median_of(3, lambda: bench.sh(f"ls -lR '{native_tree}' > /dev/null"))
    gitfs_s = median_of(3, lambda: bench.sh(f"ls -lR '{gitfs_tree}' > /dev/null"))
    bench.row(f"ls -lR current/ with -o xattr, {SMALL_TREE_FILES} files (warm), median of 3", secs(gitfs_s),
              f"{secs(native_s)} native", ratio_x(gitfs_s, native_s), "")
    mount.unmount()


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
