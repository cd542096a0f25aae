"""The batches section: a burst copied into current/ (1,000 files of 4 KiB; 3 of 60 MB
random bytes; 200 sparse files of 9.5 MB; an fsstress-like tree of 2,700 files up to 20
folders deep, a third sparse): time until the remote has it (and until committed) beside
`git add -A && git commit` + `git push` of the same tree to a remote of its own, the
seconds the status said nothing pending before the remote had it, the daemon's peak RSS
and the unmount time. The remote is a path, or with --batch-remote ssh the same bare
repositories behind an OpenSSH server on 127.0.0.1 (the tests' launcher), for git and
GitFS alike."""

from __future__ import annotations

import os
import random
import shlex
import sys
import time
from pathlib import Path

from files_bench import make_small_remote
from harness import BRANCH, MB, ROOT, Bench, Mount, fmt_mb, ratio_x, secs

sys.path.insert(0, os.path.join(ROOT, "tests"))

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


class BatchRemote:
    """Where the bursts are pushed: the bare repository's path, or an ssh:// URL of it served
    by an sshd on 127.0.0.1 with a key of the bench's own (git and GitFS both use it)."""

    def __init__(self, bench: Bench, kind: str):
        self.kind = kind
        self.server = None
        self.git_env = ""
        self.mount_options = ""
        if kind == "ssh":
            from servers import KeyPair, SshServer  # noqa: PLC0415  # the tests' launcher, only for ssh
            folder = Path(bench.path("sshd"))
            folder.mkdir()
            key = KeyPair(folder, "bench_key")
            self.server = SshServer(folder, [key])
            self.server.start()
            known = folder / "known_hosts"
            known.write_text(self.server.known_hosts_line())
            self.git_env = "GIT_SSH_COMMAND=" + shlex.quote(
                f"ssh -i {key.private} -o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes") + " "
            self.mount_options = f",ssh_key={key.private},ssh_known_hosts={known}"

    def url(self, bare: str) -> str:
        return bare if self.server is None else self.server.url(bare)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def plain_git_batch(bench: Bench, kind: str, remote: BatchRemote) -> tuple[float, float]:
    """(git add -A && git commit, git push) of the same burst to a remote like GitFS's."""
    bare, work = bench.path("remotes", f"batch-{kind}-git.git"), bench.path(f"batch-{kind}-git")
    make_small_remote(bench, bare, work)
    bench.git("config", "gc.auto", "0", cwd=work)  # the commit's objects stay loose, as GitFS's
    write_batch(os.path.join(work, "burst"), kind, bench.args.quick)
    bench.drop_caches()
    commit_s = bench.sh(f"cd '{work}' && git add -A && git commit -q -m burst")
    push_s = bench.sh(f"cd '{work}' && {remote.git_env}git push -q '{remote.url(bare)}' {BRANCH}")
    return commit_s, push_s


def bench_batches(bench: Bench) -> None:
    remote = BatchRemote(bench, bench.args.batch_remote)
    try:
        for kind in bench.args.batches.split(","):
            bench_batch(bench, kind, remote)
    finally:
        remote.stop()


def bench_batch(bench: Bench, kind: str, remote: BatchRemote) -> None:
    print(f"[11] batches: a burst into current/ (sync_timeout=1) until the {remote.kind} remote has it, "
          "vs plain git ...", flush=True)
    sync_timeout = 1.0
    commit_s, push_s = plain_git_batch(bench, kind, remote)
    bare, work = bench.path("remotes", f"batch-{kind}.git"), bench.path(f"batch-{kind}-work")
    make_small_remote(bench, bare, work)
    source = bench.path(f"batch-{kind}-source")
    write_batch(source, kind, bench.args.quick)
    mount = Mount(bench, remote.url(bare), f"batch-{kind}",
                  f"sync_timeout={sync_timeout:g},fetch_timeout=2,max_size=0{remote.mount_options}")
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
        state = mount.status()
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
    bench.row(f"batch {kind}: on the {remote.kind} remote, from the end of the copy (copy {secs(copy_s)})",
              secs(on_remote),
              f"{secs(git_s)} git add+commit {secs(commit_s)} + push {secs(push_s)}",
              ratio_x(on_remote, git_s), f"≤ 1.5× git + {sync_timeout:g} s",
              on_remote is not None and on_remote <= 1.5 * git_s + sync_timeout)
    bench.row(f"  … committed (status: commits_not_pushed); status said {', '.join(sorted(activity)) or '—'}",
              secs(committed), f"{secs(commit_s)} git add+commit", ratio_x(committed, commit_s), "—")
    pushed = None if committed is None or on_remote is None else on_remote - committed
    bench.row("  … pushed (from committed to on the remote)", secs(pushed), f"{secs(push_s)} git push",
              ratio_x(pushed, push_s), "≤ 1.5× git push", pushed is not None and pushed <= 1.5 * push_s)
    bench.row("  … seconds the status said nothing pending before the remote had it", f"{lied:.1f} s", "—", "—",
              "0 s", lied == 0)
    bench.row("  … daemon peak RSS; unmount time", fmt_mb(peak_kb), "—", "—", f"unmount {secs(unmount_s)}")
