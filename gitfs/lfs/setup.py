"""Whether a mount uses Git LFS, and with which stores.

LFS is on when the branch tip's top .gitattributes has a filter=lfs rule. The clone's
store is its .git/lfs; the remote's, for a path or file:// remote, is its own lfs/
folder (git-lfs's standalone layout); any other remote's is an LFS server reached over
HTTP(S) (http.py), at the endpoint endpoint.py finds. The git remote's credentials go
to that server only when endpoint.may_authenticate allows it.
"""

from __future__ import annotations

import base64
import logging
import os
from typing import Callable, Optional

from gitfs.lfs import attributes, endpoint
from gitfs.lfs.content import LfsContent
from gitfs.lfs.http import HttpTransfer, ssl_context
from gitfs.lfs.ssh import SshAuthenticator
from gitfs.lfs.store import ObjectStore, standalone_store
from gitfs.lfs.transfer import CountingTransfer, StandaloneTransfer, Transfer
from gitfs.repo.credentials import Credentials, transport_of
from gitfs.repo.filemodes import GIT_DIR
from gitfs.repo.repository import Repository, branch_ref

log = logging.getLogger(__name__)


def content_for(repo: Repository, remote_url: str, *, credentials: Optional[Credentials] = None,
                enabled: bool = True, url_option: str = "",
                on_missing: Optional[Callable[[str, str, str], None]] = None,
                on_found: Optional[Callable[[str], None]] = None,
                on_transfer: Optional[Callable[[str, int, int], None]] = None) -> Optional[LfsContent]:
    """The LfsContent of a mount, or None when the repository does not use LFS (or the
    `lfs` option turned it off)."""
    tip = repo.branch_tip()
    if not enabled or tip is None or not attributes.tree_uses_lfs(repo.git, repo.root_tree(tip)):
        return None
    where = endpoint.find(repo.git, repo.workdir, remote_url, url_option)
    local = ObjectStore.of_clone(os.path.join(repo.path, GIT_DIR))
    remote = standalone_store(where.url)
    transfer: Transfer
    if remote is not None:
        log.info("Git LFS: objects in %s, from %s (%s)", local.root, remote.root, where.source)
        transfer = StandaloneTransfer(local, remote)
    else:
        transfer = _http_transfer(repo, local, where, remote_url, credentials or Credentials())
    if on_transfer is not None:
        transfer = CountingTransfer(transfer, on_transfer)
    return LfsContent(local, transfer, on_missing=on_missing, on_found=on_found)


def _http_transfer(repo: Repository, local: ObjectStore, where: endpoint.Endpoint, remote_url: str,
                   credentials: Credentials) -> Transfer:
    server = endpoint.server_url(where)
    if server is None:  # is_local said otherwise: cannot happen, but never guess a server
        raise ValueError(f"no LFS server in {where.url!r}")
    authorization = None
    if endpoint.may_authenticate(where, server, remote_url):
        url_user, url_password = endpoint.credentials_in_url(remote_url)
        user, password = credentials.username or url_user, credentials.password or url_password
        if user or password:
            authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    ssh = None
    if where.source == endpoint.FROM_REMOTE and transport_of(remote_url) == "ssh":
        ssh = SshAuthenticator(remote_url, credentials, server)
    ca_file = os.path.abspath(os.path.expanduser(credentials.ssl_ca_file)) if credentials.ssl_ca_file else ""
    log.info("Git LFS: objects in %s, from the LFS server %s (%s)%s", local.root, server, where.source,
             ", endpoint and token from ssh git-lfs-authenticate" if ssh else
             "" if authorization else ", without the remote's credentials")
    return HttpTransfer(local, server, ref=branch_ref(repo.branch), authorization=authorization,
                        context=ssl_context(ca_file), ssh=ssh)
