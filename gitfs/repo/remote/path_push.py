"""A push to a path remote (`/srv/team.git`, `file:///srv/team.git`) that never overwrites
a push made meanwhile.

libgit2's local transport looks at the remote's branch when it connects and, once the
objects are copied, writes the branch by force: a push that landed in between, a
colleague's `git push` or another mount's, was overwritten while both were told they
succeeded. So the objects go to a reference of GitFS's own (PUSHING_REF, written over by
each push), and the branch is then moved the way git's receive-pack moves it: under the
branch's lock file, only from the value it was read at, only forward. A branch moved
meanwhile is a PushRejected race: the sync merges and pushes again. PUSHING_REF stays:
libgit2's local transport lists a path remote's references and then reads each, and fails
the whole fetch when one of them is deleted in between (every other mount fetches so).

The mounts of one machine, or of a team sharing the bare repository on a network disk,
also take turns (an flock of PATH_PUSH_LOCK in its git folder, which NFS supports with its
lock manager), so that PUSHING_REF is only ever one push's.

libgit2 writes a reference by its path and makes the folders it lacks, and it finds the
pushed objects in the packs it already has open: a remote moved or deleted in the middle
of a push got a new folder at its old path holding PUSHING_REF alone, which kept its owner
from moving it back. A push under which the folder changed fails, and takes away what it
wrote there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import urllib.parse
from collections.abc import Iterator

import pygit2

from gitfs.repo import compat
from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.relative_paths import folders_above
from gitfs.repo.repository import GIT_DIR

PATH_PUSH_LOCK = "gitfs-push.lock"  # in a path remote's git folder
PUSHING_REF = "refs/gitfs/pushing"  # in the path remote: the objects of its last push


def git_dir_of(url: str, kind: str) -> str:
    """The git folder of a path remote's URL (kind: transport_of's "local" or "file")."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path) if kind == "file" else url
    return os.path.join(path, GIT_DIR) if os.path.isdir(os.path.join(path, GIT_DIR)) else path


def _folder_identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


@contextlib.contextmanager
def one_push_at_a_time(git_dir: str, ref: str) -> Iterator[None]:
    """Hold the path remote's push lock for the whole push of branch `ref`. Where the
    file cannot be made (a remote this user may only read), the push goes without it, and
    libgit2 says why it cannot be made. RemoteError if the git folder was moved or deleted
    meanwhile; what the push wrote at its old path is taken away."""
    identity = _folder_identity(git_dir)
    try:
        fd = os.open(os.path.join(git_dir, PATH_PUSH_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o664)
    except OSError:
        fd = None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # the lock goes with it
        if identity is not None and _folder_identity(git_dir) != identity:
            _take_away_references(git_dir, (PUSHING_REF, ref))
            # whatever the push or the branch's move said, this is why it failed
            raise RemoteError("the repository was moved or deleted during the push")


def _take_away_references(git_dir: str, refs: tuple[str, ...]) -> None:
    """Remove `refs` (with their lock files and reflogs) from a folder the push made at a
    moved remote's old path, and the folders that leaves empty: libgit2 makes the folders
    of a reference it writes. A repository found there (a HEAD) is someone else's: nothing
    is touched."""
    if os.path.lexists(os.path.join(git_dir, "HEAD")):
        return
    written = [name for ref in refs for name in (ref, ref + ".lock", "logs/" + ref)]
    for name in written:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(git_dir, name))
    folders = {folder for name in written for folder in folders_above(name)}  # and the root
    for folder in sorted(folders, key=len, reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(git_dir, folder))  # only an empty one goes


def move_branch(git_dir: str, ref: str, tip: pygit2.Oid, where: str) -> None:
    """Move the path remote's branch `ref` to `tip`, whose objects it has (PUSHING_REF),
    only forward from its present value and only if nobody moves it meanwhile (libgit2
    compares under the branch's lock file, the one git's receive-pack takes).
    PushRejected (`where` names the remote) if the branch moved."""
    target = pygit2.Repository(git_dir, compat.RepositoryOpenFlag.NO_SEARCH)  # never one above it
    try:
        try:
            current = target.references[ref]
        except KeyError:  # a new branch: made only if nobody made it meanwhile
            try:
                target.references.create(ref, tip, force=False)
            except pygit2.AlreadyExistsError:
                raise PushRejected(f"push to {where} rejected: {ref} was made meanwhile (fetch first)") from None
        else:
            if current.target != tip and not target.descendant_of(tip, current.target):
                raise PushRejected(f"push to {where} rejected: {ref} moved (fetch first)")
            try:
                current.set_target(tip)
            except pygit2.GitError as error:  # moved since it was read, or locked by another push
                raise PushRejected(f"push to {where} rejected: {ref} moved meanwhile ({error})") from None
    finally:
        target.free()
