"""Whether a mount uses Git LFS, and with which stores.

LFS is on when the branch tip's top .gitattributes has a filter=lfs rule. The clone's
store is its .git/lfs; the remote's, for a path or file:// remote, is its own lfs/
folder (git-lfs's standalone layout). Remotes reached over the network keep showing
pointers as they are, until GitFS speaks the LFS batch API.
"""

from __future__ import annotations

import logging
import os
from typing import Callable, Optional

from gitfs.lfs import attributes, endpoint
from gitfs.lfs.content import LfsContent
from gitfs.lfs.store import ObjectStore, standalone_store
from gitfs.lfs.transfer import CountingTransfer, StandaloneTransfer, Transfer
from gitfs.repo.filemodes import GIT_DIR
from gitfs.repo.repository import Repository

log = logging.getLogger(__name__)


def content_for(repo: Repository, remote_url: str, *, enabled: bool = True, url_option: str = "",
                on_missing: Optional[Callable[[str, str, str], None]] = None,
                on_transfer: Optional[Callable[[str, int, int], None]] = None) -> Optional[LfsContent]:
    """The LfsContent of a mount, or None when the repository does not use LFS (or the
    `lfs` option turned it off)."""
    tip = repo.branch_tip()
    if not enabled or tip is None or not attributes.tree_uses_lfs(repo.git, repo.root_tree(tip)):
        return None
    where = endpoint.find(repo.git, repo.workdir, remote_url, url_option)
    remote = standalone_store(where.url)
    if remote is None:
        log.warning("the repository uses Git LFS; objects on a server are not read yet: "
                    "LFS files show their pointers")
        return None
    local = ObjectStore.of_clone(os.path.join(repo.path, GIT_DIR))
    log.info("Git LFS: objects in %s, from %s (%s)", local.root, remote.root, where.source)
    transfer: Transfer = StandaloneTransfer(local, remote)
    if on_transfer is not None:
        transfer = CountingTransfer(transfer, on_transfer)
    return LfsContent(local, transfer, on_missing=on_missing)
