"""An fsstress-like exerciser: several processes doing seeded random create, write
(sparse too), truncate, link, symlink, rename, unlink, mkdir and rmdir in one tree.

Each process works in the whole tree (names collide across processes, as they do with
fsstress); an operation that fails with an errno a real filesystem gives for such a
race (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR) is part of the workload. Any other
error is raised. The same seed and process count give the same operations per process.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
from pathlib import Path

EXPECTED = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR, errno.EINVAL}
MAX_DEPTH = 20
MAX_SPARSE = 9_500_000


def _paths(root: str) -> tuple[list[str], list[str]]:
    """(files and links, folders) under root, root included among the folders."""
    files, folders = [], [root]
    for directory, dirs, names in os.walk(root):
        folders += [os.path.join(directory, name) for name in dirs]
        files += [os.path.join(directory, name) for name in names]
        dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(directory, name))]
    return files, folders


def _operation(rng: random.Random, root: str, number: int, worker: int) -> None:
    files, folders = _paths(root) if number % 50 == 0 or not hasattr(_operation, "cache") else _operation.cache
    _operation.cache = (files, folders)  # type: ignore[attr-defined]  # listed again every 50 operations
    folder = rng.choice(folders)
    if folder.count(os.sep) - root.count(os.sep) >= MAX_DEPTH:
        folder = root
    new = os.path.join(folder, f"w{worker}n{number}")
    some = rng.choice(files) if files else new
    kind = rng.choices(["create", "write", "sparse", "truncate", "link", "symlink", "rename", "unlink", "mkdir",
                        "rmdir"], weights=[12, 10, 3, 5, 3, 3, 5, 6, 6, 2])[0]
    if kind == "create":
        with open(new, "wb") as handle:
            handle.write(rng.randbytes(rng.randrange(0, 8192)))
    elif kind == "write" and not os.path.islink(some):
        with open(some, "r+b") as handle:
            handle.seek(rng.randrange(0, 65536))
            handle.write(rng.randbytes(rng.randrange(1, 16384)))
    elif kind == "sparse":
        with open(new, "wb") as handle:
            handle.seek(rng.randrange(0, MAX_SPARSE))
            handle.write(rng.randbytes(rng.randrange(1, 4096)))
            handle.truncate(rng.randrange(1, MAX_SPARSE))
    elif kind == "truncate" and not os.path.islink(some):
        os.truncate(some, rng.randrange(0, 200_000))
    elif kind == "link" and not os.path.islink(some):
        os.link(some, new)
    elif kind == "symlink":
        os.symlink(os.path.relpath(some, folder), new)
    elif kind == "rename":
        os.rename(some, new)
        files.append(new)
    elif kind == "unlink":
        os.unlink(some)
    elif kind == "mkdir":
        os.mkdir(new)
        folders.append(new)
    elif kind == "rmdir" and folder != root:
        os.rmdir(folder)


def _worker(root: str, seed: int, worker: int, operations: int) -> None:
    rng = random.Random(f"{seed}/{worker}")
    for number in range(operations):
        try:
            _operation(rng, root, number, worker)
        except OSError as error:
            if error.errno not in EXPECTED:
                raise


def start(root: Path, *, processes: int = 4, operations: int = 1000, seed: int = 1) -> list:
    """`processes` processes started, each to do `operations` random operations in root
    (wait() for them). Forked: start them before the caller has threads of its own."""
    os.makedirs(root, exist_ok=True)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_worker, args=(str(root), seed, worker, operations))
               for worker in range(processes)]
    for process in workers:
        process.start()
    return workers


def wait(workers: list) -> None:
    for process in workers:
        process.join()
    failed = [process.exitcode for process in workers if process.exitcode]
    assert not failed, f"fsstress workers failed: {failed}"


def run(root: Path, *, processes: int = 4, operations: int = 1000, seed: int = 1) -> None:
    """`processes` processes, each doing `operations` random operations in root."""
    wait(start(root, processes=processes, operations=operations, seed=seed))
