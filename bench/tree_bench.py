"""The tree section: the per-file workloads of a 20,000-file project, cold and warm (grep
-r, diff -rq, cp -a, find), beside their native and git baselines, with the floor of
their FUSE round trips."""

from __future__ import annotations

import functools
import os
import random
import shutil
import signal
import subprocess
import time
from typing import Optional

from harness import BRANCH, Bench, Mount, fmt_mb, median_of, ratio_x, run_op, secs

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
