#!/usr/bin/env python3
"""Git LFS over HTTP: upload and download of one object (200 MiB by default) by GitFS's
HttpTransfer, side by side with the real git-lfs client, against the same giftless server
on 127.0.0.1 (plain HTTP, no proxy in front); then a small write into current/ of a real
mount while a big object goes up, beside the same write with nothing going up.

    python3 bench/lfs_http.py [--mib 200] [--runs 1] [--only transfer|small-write]

Small write: a mount of a remote served by the tests' nginx (git http-backend, giftless
behind it, uploads of objects paced at 2 MiB/s by nginx's stream proxy); the time of
writing and closing a 40-byte file in current/, median of several, first with nothing
going up, then while a 24 MiB file written just before is on its way to giftless (only
writes that ended while the server held part of the object count).

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
import hashlib
import json
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
from servers import HTTP_PASSWORD, HTTP_USER, GiftlessServer, HttpServer  # noqa: E402

SLOW_UPLOAD_MIB = 24
UPLOAD_RATE = "2m"  # nginx's rate: 2 MiB/s
SMALL_WRITES = 7
# One child process times the small writes (a hung mount cannot hang the benchmark):
# open, write, close of a new file each time; the seconds of each, as JSON.
SMALL_WRITER = """
import json, os, sys, time
folder, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
took = []
for number in range(count):
    started = time.monotonic()
    with open(os.path.join(folder, f"{prefix}-{number}.txt"), "w") as out:
        out.write("a small file written during the bench\\n")
    took.append(time.monotonic() - started)
    time.sleep(0.2)
print(json.dumps(took))
"""

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
    parser.add_argument("--only", choices=("transfer", "small-write"), help="one of the two benchmarks")
    args = parser.parse_args(argv)
    if shutil.which("git-lfs") is None:
        raise SystemExit("git-lfs is not installed")
    if args.only != "small-write":
        transfer_bench(args)
    if args.only != "transfer":
        small_write_bench()
    return 0


def transfer_bench(args) -> None:
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


def small_write_bench() -> None:
    """The small write's time in current/ with nothing going up, then during a paced upload."""
    base = tempfile.mkdtemp(prefix="gitfs-bench-lfs-write-")
    giftless = GiftlessServer(_folder(base, "giftless"))
    nginx = HttpServer(_folder(base, "nginx"), _folder(base, "git"), _self_signed(_folder(base, "tls")),
                       giftless_port=giftless.port, lfs_upload_rate=UPLOAD_RATE)
    mount_point, process = _folder(base, "mnt"), None
    try:
        bare = os.path.join(base, "git", "org", "remote.git")
        work = os.path.join(base, "work")
        run("git", "init", "-q", "--bare", "-b", "main", bare)
        run("git", "clone", "-q", bare, work)
        with open(os.path.join(work, ".gitattributes"), "w") as out:
            out.write("*.bin filter=lfs diff=lfs merge=lfs -text\n")
        run("git", "add", ".gitattributes", cwd=work)
        run("git", "commit", "-q", "-m", "LFS for .bin", cwd=work)
        run("git", "push", "-q", "origin", "main", cwd=work)
        giftless.start()
        nginx.start()
        options = ",".join([f"repo_path={os.path.join(base, 'clone')}", f"log={os.path.join(base, 'gitfs.log')}",
                            "foreground", "sync_timeout=0.5", f"username={HTTP_USER}", f"password={HTTP_PASSWORD}"])
        process = subprocess.Popen([sys.executable, "-m", "gitfs", nginx.http_url("org/remote.git"),
                                    str(mount_point), "-o", options], cwd=ROOT, env=ENV,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: os.path.ismount(mount_point) or process.poll() is not None, 60, "the mount")
        if process.poll() is not None:
            raise SystemExit(f"gitfs exited with {process.returncode}")
        current = os.path.join(mount_point, "current")
        idle = _small_writes(current, "idle")

        content = os.urandom(SLOW_UPLOAD_MIB << 20)
        oid = hashlib.sha256(content).hexdigest()
        with open(os.path.join(current, "video.bin"), "wb") as out:
            out.write(content)

        def stored_size() -> int:
            stored = giftless.object_path(oid)
            return stored.stat().st_size if stored is not None else 0
        _wait(lambda: stored_size() > 0, 120, "the upload under way")
        during = _small_writes(current, "during")
        complete = stored_size() == len(content)
        print(f"\nA small write into current/ (open, write, close), median of {SMALL_WRITES}")
        print(f"{'figure':34} {'time':>10}")
        print(f"{'with nothing going up':34} {statistics.median(idle) * 1000:7.1f} ms")
        print(f"{f'during a {SLOW_UPLOAD_MIB} MiB upload at 2 MiB/s':34} {statistics.median(during) * 1000:7.1f} ms"
              + ("   (the upload ended before the last write: not a fair figure)" if complete else ""))
    finally:
        if process is not None:
            subprocess.run([shutil.which("fusermount3") or "fusermount", "-u", str(mount_point)],
                           capture_output=True)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        nginx.stop()
        giftless.stop()
        shutil.rmtree(base, ignore_errors=True)


def _small_writes(folder: str, prefix: str) -> list[float]:
    result = subprocess.run([sys.executable, "-c", SMALL_WRITER, folder, prefix, str(SMALL_WRITES)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit(f"the small writes failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


def _wait(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def _self_signed(folder):
    """A certificate for the HTTPS server block nginx is given (the bench uses plain HTTP)."""
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(folder / "server.key"), "-out", str(folder / "server.pem"), "-days", "2",
        "-subj", "/CN=127.0.0.1")

    class Certificate:
        server_cert = folder / "server.pem"
        server_key = folder / "server.key"
    return Certificate


def _folder(base: str, name: str):
    from pathlib import Path  # noqa: PLC0415  # GiftlessServer takes a Path
    path = Path(base) / name
    path.mkdir()
    return path


if __name__ == "__main__":
    sys.exit(main())
