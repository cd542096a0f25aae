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
 12. aging: a clone aged by 2,000 fetches (400 with --quick), mounted with 1,024 open files:
     open files, maps and packs, untidied (no git) and once GitFS has tidied it, and reads of
     current/, a busy file's versions and history/ beside the same clone after `git repack -ad`.
 13. soak: a colleague pushing every second and a writer appending through the mount every
     second for 10 minutes (2 with --quick): RSS, open files, maps, threads, packs and loose
     objects sampled, their growth per hour, every line of both sides kept.

 14. the versions of a file changed in every commit of a 300,000-commit history (30,000
     with --quick) and of one changed once: the daemon's RSS at each step (peak and
     after), each listing beside `git log --format=%H -- FILE`, RSS once idle.

 15. lfs: 2,000 small files in Git LFS beside the same as plain blobs (two path remotes):
     first mount, `ls -lR` of current/ and of the tip commit's folder in history/, `cat` of
     every file there (fresh mounts, cold and warm, with the daemon's CPU time); 500 new files
     of 4 KiB written into current/ until the remote has them, .bin in LFS beside .txt.

 16. busy: a logger writing a row every 0.1 s for 2 minutes (30 s with --quick), reopening its
     file for each row, then holding it open, each beside a save every 7 s,
     `sync_timeout=1,max_sync_delay=5`: each row's and save's delay to the remote beside a quiet
     mount's save, the commits per hour and the daemon's CPU time per minute.

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
import json
import os
import sys
import time
from typing import Callable

import harness
from aging_bench import AGING_PUSHES, SOAK_MINUTES, bench_aging, bench_soak
from batches_bench import BATCH_KINDS, bench_batches
from busy_bench import BUSY_MINUTES, bench_busy
from files_bench import bench_files
from harness import OPS, Bench, machine_lines, print_table
from history_bench import bench_history, bench_scale
from lfs_bench import LFS_FILES, LFS_WRITES, bench_lfs
from tar_bench import bench_tar
from tree_bench import TREE_COMMITS, TREE_FILES, bench_tree
from versions_bench import BUSY_COMMITS, bench_busy_file


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
    parser.add_argument("--sections", default="history,versions,files,tree,tar,batches,lfs,aging,soak,busy",
                        help="comma-separated: history, versions, files, tree, tar, batches, lfs, aging, soak, busy")
    parser.add_argument("--aging-pushes", type=int,
                        help=f"fetched pushes that age the aging section's clone ({AGING_PUSHES}; 400 with --quick)")
    parser.add_argument("--soak-minutes", type=float,
                        help=f"minutes of the soak ({SOAK_MINUTES}; 2 with --quick; 60 for an hour)")
    parser.add_argument("--busy-minutes", type=float,
                        help=f"minutes of each logger of the busy section ({BUSY_MINUTES:g}; 0.5 with --quick)")
    parser.add_argument("--busy-commits", type=int,
                        help=f"commits of the busy-file history ({BUSY_COMMITS}; 30000 with --quick)")
    parser.add_argument("--tree", default=f"{TREE_FILES}:{TREE_COMMITS}",
                        help="FILES:COMMITS of the per-file workloads' project, comma-separated for several "
                             f"(default {TREE_FILES}:{TREE_COMMITS}; e.g. 20000:2000,100000:2000)")
    parser.add_argument("--batches", default=",".join(BATCH_KINDS),
                        help=f"comma-separated bursts of the batches section (default {','.join(BATCH_KINDS)})")
    parser.add_argument("--batch-remote", choices=("path", "ssh"), default="path",
                        help="the batches section's remote: a bare repository's path (default) or the same over "
                             "an sshd on 127.0.0.1")
    parser.add_argument("--lfs-files", type=int, default=LFS_FILES,
                        help=f"files in Git LFS (and as plain blobs) the lfs section reads (default {LFS_FILES})")
    parser.add_argument("--lfs-writes", type=int, default=LFS_WRITES,
                        help=f"new files of each batch the lfs section writes (default {LFS_WRITES})")
    parser.add_argument("--count-round-trips", action="store_true",
                        help="count the round trips of each per-file workload (strace on the daemon; slow)")
    parser.add_argument("--code", help="mount this checkout of GitFS instead of this one (to compare two versions)")
    parser.add_argument("--op", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.code:
        harness.ROOT = os.path.abspath(args.code)
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
        if "versions" in wanted:
            busy = args.busy_commits or (30_000 if args.quick else BUSY_COMMITS)
            sections.append(lambda: bench_busy_file(bench_holder[0], busy))
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
        if "lfs" in wanted:
            sections.append(lambda: bench_lfs(bench_holder[0], args.lfs_files, args.lfs_writes))
        if "aging" in wanted:
            pushes = args.aging_pushes or (400 if args.quick else AGING_PUSHES)
            sections.append(lambda: bench_aging(bench_holder[0], pushes))
        if "soak" in wanted:
            minutes = args.soak_minutes or (2 if args.quick else SOAK_MINUTES)
            sections.append(lambda: bench_soak(bench_holder[0], minutes))
        if "busy" in wanted:
            busy_minutes = args.busy_minutes or (0.5 if args.quick else BUSY_MINUTES)
            sections.append(lambda: bench_busy(bench_holder[0], busy_minutes, args.quick))
        what = ", ".join(part for part in (
            f"histories: {', '.join(histories)}, {commits} commits each{' (--quick)' if args.quick else ''}"
            if "history" in wanted else "",
            f"project (files:commits): {args.tree}" if "tree" in wanted else "",
            f"batches{' (a tenth, --quick)' if args.quick else ''}" if "batches" in wanted else "",
            f"lfs: {args.lfs_files} files read, {args.lfs_writes} written a batch" if "lfs" in wanted else "",
            f"busy: {busy_minutes:g} min a logger" if "busy" in wanted else "")
            if part) \
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
