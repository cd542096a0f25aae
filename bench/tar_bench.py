"""The tar section: tar x of 1,000 small files into current/, the time until the remote has
them, and the commits it took."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time

from files_bench import make_small_remote
from harness import BRANCH, Bench, Mount, median_of, peer_mount, ratio_x, run_op, secs

TAR_FILES = 1000


TAR_ROUND_TRIPS = 8  # per file of a tar x into current/, as root (see bench_tar)


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
