"""Model check of current/: the same seeded random operations on the mount and on a
plain directory must give the same results (errno, contents, sizes, modes) after
every step, and once synced the remote's tree must equal the plain directory.

The mix includes what users do to folders: renames into new nested folders, edits
before and after them, deleting a folder that was just edited; and pauses longer than
sync_timeout, so that a sync falls between any two operations. The daemon's log must
stay free of "sync failed": the remote here is a local bare repository, so every such
line is a local failure nobody caused.

A failure prints the seed and a shrunk sequence (delta debugging, each trial in a
fresh subdirectory of the same mount). `make test` runs a quick version; the
`stress` marker runs >= 20,000 operations. GITFS_MODEL_SEEDS=1,2 replays seeds.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import stat
import time
from pathlib import Path

import pytest

from helpers import KEEP, plain_tree, remote_tree, wait_synced, without_redundant_keeps

NAMES = ["a", "b", "c"]
MODES = [0o644, 0o755, 0o600, 0o700]


def random_path(rng: random.Random) -> str:
    return "/".join(rng.choice(NAMES) for _ in range(rng.choice([1, 1, 2, 2, 3])))


def random_ops(seed: int, count: int) -> list[tuple]:
    rng = random.Random(seed)
    ops = []
    for _ in range(count):
        kind = rng.choices(["create", "write", "append", "truncate", "rename", "unlink", "mkdir", "rmdir",
                            "chmod", "symlink", "fsync", "move_nested", "rmtree", "pause"],
                           weights=[10, 14, 8, 6, 10, 6, 10, 6, 5, 4, 4, 6, 3, 3])[0]
        path = random_path(rng)
        if kind == "move_nested":  # into folders made for it, as `mkdir -p x/y && mv d x/y/d`
            ops.append((kind, path, "/".join(rng.choice(NAMES) for _ in range(rng.choice([2, 3, 3])))))
        elif kind == "pause":
            ops.append((kind,))
        elif kind == "write":
            offset = rng.choice([0, 0, rng.randrange(64), rng.randrange(6000)])
            ops.append((kind, path, offset, rng.randbytes(rng.randrange(1, 80))))
        elif kind in ("append", "fsync"):
            ops.append((kind, path, rng.randbytes(rng.randrange(0, 40))))
        elif kind == "truncate":
            ops.append((kind, path, rng.choice([0, rng.randrange(100), rng.randrange(9000)])))
        elif kind == "rename":
            ops.append((kind, path, random_path(rng)))
        elif kind == "chmod":
            ops.append((kind, path, rng.choice(MODES)))
        elif kind == "symlink":
            target = rng.choice([rng.choice(NAMES), random_path(rng), "nowhere", "../" + rng.choice(NAMES),
                                 os.path.basename(path)])  # the last one: a loop
            ops.append((kind, target, path))
        else:
            ops.append((kind, path))
    return ops


def apply(root: Path, op: tuple):
    """Run one operation under root; ('ok', value) or ('errno', code)."""
    kind = op[0]
    try:
        if kind == "pause":  # the mount's side sleeps (see run_steps)
            pass
        elif kind == "move_nested":
            os.makedirs(root / os.path.dirname(op[2]), exist_ok=True)
            os.rename(root / op[1], root / op[2])
        elif kind == "rmtree":
            if not stat.S_ISDIR(os.lstat(root / op[1]).st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory")
            shutil.rmtree(root / op[1])
        elif kind == "create":
            os.close(os.open(root / op[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644))
        elif kind == "write":
            fd = os.open(root / op[1], os.O_WRONLY)
            try:
                os.pwrite(fd, op[3], op[2])
            finally:
                os.close(fd)
        elif kind == "append":
            fd = os.open(root / op[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, op[2])
            finally:
                os.close(fd)
        elif kind == "fsync":
            fd = os.open(root / op[1], os.O_RDWR)
            try:
                os.pwrite(fd, op[2], 0)
                os.fsync(fd)
                return "ok", os.pread(fd, 100000, 0)
            finally:
                os.close(fd)
        elif kind == "truncate":
            os.truncate(root / op[1], op[2])
        elif kind == "rename":
            os.rename(root / op[1], root / op[2])
        elif kind == "unlink":
            os.unlink(root / op[1])
        elif kind == "mkdir":
            os.mkdir(root / op[1], 0o755)
        elif kind == "rmdir":
            os.rmdir(root / op[1])
        elif kind == "chmod":
            os.chmod(root / op[1], op[2])
        elif kind == "symlink":
            os.symlink(op[1], root / op[2])
        return "ok", None
    except OSError as error:
        return "errno", errno.errorcode.get(error.errno, error.errno)


def snapshot(root: Path) -> dict:
    """{path: (kind, mode bits, size, bytes or link text)} of everything below root."""
    state = {}
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel + "/"
        for name in sorted(dirs + files):
            full = os.path.join(directory, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                state[rel + name] = ("link", None, None, os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                state[rel + name] = ("dir", stat.S_IMODE(st.st_mode), None, None)
            else:
                with open(full, "rb") as handle:
                    data = handle.read()
                state[rel + name] = ("file", stat.S_IMODE(st.st_mode), st.st_size, data)
                assert len(data) == st.st_size, f"{rel + name}: stat says {st.st_size}, read gives {len(data)}"
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    return state


def short(entry):
    """An entry of snapshot() with its content cut to 40 bytes, for a readable diff."""
    if entry is None:
        return None
    return entry[:3] + ((entry[3][:40],) if entry[3] is not None else (None,))


def diff(mine: dict, model: dict) -> str:
    lines = []
    for path in sorted(set(mine) | set(model)):
        a, b = mine.get(path), model.get(path)
        if a != b:
            lines.append(f"  {path}: mount={short(a)} model={short(b)}")
    return "\n".join(lines)


def run_steps(mount_root: Path, plain_root: Path, ops: list[tuple], pause: float) -> str | None:
    """Apply ops to both roots; a description of the first divergence, or None."""
    mount_root.mkdir()
    plain_root.mkdir(parents=True)
    for number, op in enumerate(ops):
        if op[0] == "pause":
            time.sleep(pause)
        got, expected = apply(mount_root, op), apply(plain_root, op)
        if got != expected:
            return f"step {number} {op!r}: mount gave {got}, plain directory gave {expected}"
        mine, model = snapshot(mount_root), snapshot(plain_root)
        if mine != model:
            return f"step {number} {op!r}: trees differ:\n{diff(mine, model)}"
    return None


def check_remote(mount, base: str, plain_root: Path) -> str | None:
    wait_synced(mount)
    on_remote = without_redundant_keeps(remote_tree(mount.remote.bare, prefix=base + "/"))
    expected = {f"{base}/{p}": v for p, v in plain_tree(plain_root).items()}
    if not expected:  # the base directory itself is empty: its .keep
        expected = {f"{base}/{KEEP}": ("100644", b"")}
    if on_remote != expected:
        lines = [f"  {p}: remote={on_remote.get(p, ('-', b''))[0]}/{on_remote.get(p, ('', b''))[1][:30]!r} "
                 f"model={expected.get(p, ('-', b''))[0]}/{expected.get(p, ('', b''))[1][:30]!r}"
                 for p in sorted(set(on_remote) | set(expected)) if on_remote.get(p) != expected.get(p)]
        return "the remote's tree differs from the model:\n" + "\n".join(lines)
    return None


def shrink(ops: list[tuple], fails, budget: float = 120.0) -> list[tuple]:
    """ddmin-style: drop chunks while the failure persists, halving the chunk size."""
    deadline = time.monotonic() + budget
    chunk = max(len(ops) // 2, 1)
    while chunk >= 1 and time.monotonic() < deadline:
        start, shrunk = 0, False
        while start < len(ops) and time.monotonic() < deadline:
            candidate = ops[:start] + ops[start + chunk:]
            if candidate and fails(candidate):
                ops, shrunk = candidate, True
            else:
                start += chunk
        if not shrunk:
            chunk //= 2
    return ops


def local_failures(mount, since: int) -> str | None:
    """The "sync failed" lines the daemon logged after byte `since` of its log."""
    lines = [line for line in mount.log_text()[since:].splitlines() if "sync failed" in line]
    return "the log shows sync failures:\n" + "\n".join(lines) if lines else None


class ModelRun:
    def __init__(self, mount, plain: Path, pause: float):
        self.mount = mount
        self.plain = plain
        self.pause = pause
        self.trials = 0

    def fresh(self):
        self.trials += 1
        name = f"t{self.trials}"
        return name, self.mount.current / name, self.plain / name

    def steps_fail(self, ops) -> str | None:
        _name, mount_root, plain_root = self.fresh()
        return run_steps(mount_root, plain_root, ops, self.pause)

    def fails(self, ops) -> str | None:
        since = len(self.mount.log_text())
        name, mount_root, plain_root = self.fresh()
        return (run_steps(mount_root, plain_root, ops, self.pause) or check_remote(self.mount, name, plain_root)
                or local_failures(self.mount, since))


def model_check(mount, plain: Path, seed: int, count: int, sync_timeout: float):
    runner = ModelRun(mount, plain, pause=sync_timeout + 0.3)
    ops = random_ops(seed, count)
    name, mount_root, plain_root = runner.fresh()
    problem = run_steps(mount_root, plain_root, ops, runner.pause)
    check = runner.steps_fail
    if problem is None:
        problem = check_remote(mount, name, plain_root) or local_failures(mount, 0)
        check = runner.fails
    if problem is None:
        return
    small = shrink(ops, check)
    listing = "\n".join(f"  {op!r}," for op in small)
    pytest.fail(f"seed {seed}, {count} operations: {problem}\n"
                f"shrunk to {len(small)} operations ({check(small)}):\n[\n{listing}\n]")


def seeds(default: list[int]) -> list[int]:
    given = os.environ.get("GITFS_MODEL_SEEDS")
    return [int(s) for s in given.split(",")] if given else default


@pytest.mark.parametrize("seed", seeds([1, 2, 3]))
def test_model_quick(remote, mount_gitfs, tmp_path, seed):
    mount = mount_gitfs(remote, sync_timeout=0.3)
    model_check(mount, tmp_path / "plain", seed, 300, sync_timeout=0.3)


@pytest.mark.stress
@pytest.mark.parametrize("seed", seeds(list(range(100, 110))))
def test_model_stress(remote, mount_gitfs, tmp_path, seed):
    mount = mount_gitfs(remote, sync_timeout=0.2)
    model_check(mount, tmp_path / "plain", seed, 2100, sync_timeout=0.2)
