"""An fsstress-like exerciser: several processes doing seeded random create, write
(sparse too), truncate, link, symlink, rename, unlink, mkdir and rmdir in one tree.

Each process works in the whole tree (names collide across processes, as they do with
fsstress); an operation that fails with an errno a real filesystem gives for such a
race (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR) is part of the workload. Any other
error is raised. The same seed and process count give the same operations per process.

Names are never reused: each new file, link, symlink or folder is `w{worker}n{number}`,
and only files are renamed (to such a new name). Given a folder for its log, each process writes there
the links and renames it made, which names_ever_linked() reads back.
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


def _operation(rng: random.Random, root: str, number: int, worker: int, log) -> None:
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
        log(f"link {os.path.basename(some)} {os.path.basename(new)}")
    elif kind == "symlink":
        os.symlink(os.path.relpath(some, folder), new)
    elif kind == "rename":
        os.rename(some, new)
        log(f"rename {os.path.basename(some)} {os.path.basename(new)}")
        files.append(new)
    elif kind == "unlink":
        os.unlink(some)
    elif kind == "mkdir":
        os.mkdir(new)
        folders.append(new)
    elif kind == "rmdir" and folder != root:
        os.rmdir(folder)


def _worker(root: str, seed: int, worker: int, operations: int, log_dir: str | None) -> None:
    rng = random.Random(f"{seed}/{worker}")
    log_file = open(os.path.join(log_dir, f"worker{worker}.log"), "w") if log_dir else None  # noqa: SIM115
    log = (lambda line: print(line, file=log_file)) if log_file else (lambda line: None)
    try:
        for number in range(operations):
            try:
                _operation(rng, root, number, worker, log)
            except OSError as error:
                if error.errno not in EXPECTED:
                    raise
    finally:
        if log_file:
            log_file.close()


def start(root: Path, *, processes: int = 4, operations: int = 1000, seed: int = 1,
          log_dir: Path | None = None) -> list:
    """`processes` processes started, each to do `operations` random operations in root
    (wait() for them). Forked: start them before the caller has threads of its own.
    log_dir: where each process logs its links and renames (names_ever_linked)."""
    os.makedirs(root, exist_ok=True)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_worker, args=(str(root), seed, worker, operations,
                                                     str(log_dir) if log_dir else None))
               for worker in range(processes)]
    for process in workers:
        process.start()
    return workers


def wait(workers: list) -> None:
    for process in workers:
        process.join()
    failed = [process.exitcode for process in workers if process.exitcode]
    assert not failed, f"fsstress workers failed: {failed}"


def names_ever_linked(log_dir: Path) -> set[str]:
    """The file names (last components) that were, at some time, one of several names of a
    file: those a link was made from or to, and the names they were renamed to or from.
    The processes' logs do not say in which order their operations ran, so a rename counts
    both ways: more names than were linked, never fewer."""
    edges: list[tuple[str, str]] = []
    linked: set[str] = set()
    for log in sorted(Path(log_dir).glob("worker*.log")):
        for line in log.read_text().splitlines():
            kind, old, new = line.split()
            edges.append((old, new))
            if kind == "link":
                linked |= {old, new}
    grown = True
    while grown:
        grown = False
        for old, new in edges:
            if (old in linked) != (new in linked):
                linked |= {old, new}
                grown = True
    return linked


def run(root: Path, *, processes: int = 4, operations: int = 1000, seed: int = 1) -> None:
    """`processes` processes, each doing `operations` random operations in root."""
    wait(start(root, processes=processes, operations=operations, seed=seed))
