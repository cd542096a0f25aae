#!/usr/bin/env python3
"""Git LFS over HTTP: upload and download of one object (200 MiB by default) by GitFS's
HttpTransfer, side by side with the real git-lfs client, against the same giftless server
on 127.0.0.1 (plain HTTP, no proxy in front).

    python3 bench/lfs_http.py [--mib 200] [--runs 1]

GitFS: HttpTransfer.upload from a store holding the object, HttpTransfer.download into an
empty store (hashed and fsynced as it arrives). git-lfs: `git lfs push origin main` from a
clone that committed the file (cleaned beforehand, not timed), `git lfs fetch origin main`
into a fresh clone. Each side uses a repository path of its own on the server, so that
neither finds the object there already. Needs git-lfs and giftless (.ci/install-deps);
giftless is started with the tests' own launcher (tests/servers.py) and stopped, with
every child, at the end. Everything lives in one temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from gitfs.lfs.http import HttpTransfer  # noqa: E402
from gitfs.lfs.pointer import Pointer  # noqa: E402
from gitfs.lfs.store import ObjectStore  # noqa: E402
from servers import GiftlessServer  # noqa: E402

ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
           GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org")


def run(*args: str, cwd: str | None = None) -> None:
    result = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {result.stderr.strip()}")


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def git_lfs_side(base: str, endpoint: str, source: str, number: int) -> tuple[float, float]:
    """(push seconds, fetch seconds) of git-lfs for the file at source."""
    bare, work, fresh = (os.path.join(base, f"{name}{number}") for name in ("bare", "work", "fresh"))
    run("git", "init", "-q", "--bare", "-b", "main", bare)
    run("git", "clone", "-q", bare, work)
    run("git", "config", "lfs.url", endpoint, cwd=work)
    run("git", "lfs", "install", "--local", cwd=work)
    run("git", "lfs", "track", "*.bin", cwd=work)
    shutil.copyfile(source, os.path.join(work, "big.bin"))
    run("git", "add", ".gitattributes", "big.bin", cwd=work)
    run("git", "commit", "-q", "-m", "big", cwd=work)
    push = timed(lambda: run("git", "lfs", "push", "origin", "main", cwd=work))
    run("git", "push", "-q", "--no-verify", "origin", "main", cwd=work)  # the ref only: no LFS hook
    run("git", "clone", "-q", "-c", f"lfs.url={endpoint}", bare, fresh)
    run("git", "lfs", "install", "--local", "--skip-smudge", cwd=fresh)
    fetch = timed(lambda: run("git", "lfs", "fetch", "origin", "main", cwd=fresh))
    return push, fetch


def gitfs_side(base: str, endpoint: str, source: str, number: int) -> tuple[float, float]:
    """(upload seconds, download seconds) of HttpTransfer for the file at source."""
    holding = ObjectStore(os.path.join(base, f"gitfs-up{number}"))
    with open(source, "rb") as handle:
        pointer: Pointer = holding.add(handle)
    failed: dict[str, str] = {}
    upload = timed(lambda: failed.update(HttpTransfer(holding, endpoint).upload([pointer])))
    empty = ObjectStore(os.path.join(base, f"gitfs-down{number}"))
    download = timed(lambda: failed.update(HttpTransfer(empty, endpoint).download([pointer])))
    if failed or not empty.has(pointer):
        raise SystemExit(f"GitFS transfer failed: {failed}")
    return upload, download


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=200, help="size of the object, MiB")
    parser.add_argument("--runs", type=int, default=1, help="runs of each side (the median is shown)")
    args = parser.parse_args(argv)
    if shutil.which("git-lfs") is None:
        raise SystemExit("git-lfs is not installed")
    base = tempfile.mkdtemp(prefix="gitfs-bench-lfs-")
    server = GiftlessServer(_folder(base, "giftless"))
    try:
        source = os.path.join(base, "big.bin")
        with open(source, "wb") as out:
            for _ in range(args.mib):
                out.write(os.urandom(1 << 20))
        server.start()
        url = f"http://127.0.0.1:{server.port}/bench"
        ours, theirs = [], []
        for number in range(args.runs):
            ours.append(gitfs_side(base, f"{url}/gitfs{number}.git/info/lfs", source, number))
            theirs.append(git_lfs_side(base, f"{url}/gitlfs{number}.git/info/lfs", source, number))
        rows = [("upload", [o[0] for o in ours], [t[0] for t in theirs]),
                ("download", [o[1] for o in ours], [t[1] for t in theirs])]
        print(f"Git LFS over HTTP, one {args.mib} MiB object, giftless on 127.0.0.1, median of {args.runs}")
        print(f"{'figure':10} {'GitFS':>16} {'git-lfs':>16} {'ratio':>7}")
        for name, gitfs_times, lfs_times in rows:
            ours_s, theirs_s = statistics.median(gitfs_times), statistics.median(lfs_times)
            print(f"{name:10} {ours_s:6.2f} s {args.mib / ours_s:5.0f} MiB/s {theirs_s:6.2f} s "
                  f"{args.mib / theirs_s:5.0f} MiB/s {ours_s / theirs_s:6.2f}x")
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


def _folder(base: str, name: str):
    from pathlib import Path  # noqa: PLC0415  # GiftlessServer takes a Path
    path = Path(base) / name
    path.mkdir()
    return path


if __name__ == "__main__":
    sys.exit(main())
