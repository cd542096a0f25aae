"""A clone aged as a mount left running for weeks ages it: a colleague's pushes, each
fetched by libgit2 into the clone, which keeps every fetch as a pack of its own. Used by
the aging tests and by the benchmark (bench/aging_bench.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pygit2

COLLEAGUE = pygit2.Signature("Colleague", "colleague@example.com")
FILES = 40  # the colleague's files, each changed again every FILES pushes


def age_clone(bare: Path, clone: Path, pushes: int, branch: str = "main") -> None:
    """`pushes` commits made on the remote (as a colleague's git push leaves them), each
    fetched into the clone by libgit2 before the next: one pack per fetch."""
    server = pygit2.Repository(str(bare))
    origin = pygit2.Repository(str(clone)).remotes["origin"]
    ref = f"refs/heads/{branch}"
    for number in range(pushes):
        parent = server.references[ref].target
        tree = server.TreeBuilder(server[parent].peel(pygit2.Tree))
        text = f"push {number} by a colleague\n".encode() * 20
        tree.insert(f"colleague-{number % FILES:02d}.txt", server.create_blob(text), pygit2.GIT_FILEMODE_BLOB)
        server.create_commit(ref, COLLEAGUE, COLLEAGUE, f"push {number}", tree.write(), [parent])
        origin.fetch()


def age_clone_quickly(bare: Path, clone: Path, pushes: int, branch: str = "main") -> None:
    """The clone `age_clone` leaves, made faster: each push's new objects (a commit, its
    tree and blob) written into the clone as a pack of their own, as libgit2's fetch
    writes them, and the remote-tracking branch set to the last (a fetch slows down as
    packs pile up: 2,000 took 150 s)."""
    server = pygit2.Repository(str(bare))
    pack_dir = str(Path(clone) / ".git" / "objects" / "pack")
    ref = f"refs/heads/{branch}"
    for number in range(pushes):
        parent = server.references[ref].target
        tree = server.TreeBuilder(server[parent].peel(pygit2.Tree))
        blob = server.create_blob(f"push {number} by a colleague\n".encode() * 20)
        tree.insert(f"colleague-{number % FILES:02d}.txt", blob, pygit2.GIT_FILEMODE_BLOB)
        tree_id = tree.write()
        commit = server.create_commit(ref, COLLEAGUE, COLLEAGUE, f"push {number}", tree_id, [parent])
        packer = pygit2.PackBuilder(server)
        for oid in (commit, tree_id, blob):
            packer.add(oid)
        packer.write(pack_dir)
    local = pygit2.Repository(str(clone))
    local.references.create(f"refs/remotes/origin/{branch}", server.references[ref].target, force=True)


def pack_count(repo_path: Path) -> int:
    pack_dir = Path(repo_path) / ".git" / "objects" / "pack"
    return sum(1 for name in os.listdir(pack_dir) if name.endswith(".pack")) if pack_dir.exists() else 0


def loose_count(repo_path: Path) -> int:
    objects = Path(repo_path) / ".git" / "objects"
    return sum(len(os.listdir(objects / name)) for name in os.listdir(objects)
               if len(name) == 2 and (objects / name).is_dir())


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class OpenFilesPeak:
    """The most descriptors a process held, sampled every 20 ms while the block runs."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> OpenFilesPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            try:
                self.peak = max(self.peak, open_files(self.pid))
            except OSError:
                return
