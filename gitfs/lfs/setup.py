"""Whether a mount uses Git LFS, and with which stores.

LFS is on when a .gitattributes of the branch tip (any folder's) has a filter=lfs rule,
and turns on while mounted once one has such a rule (LfsRules). The clone's
store is its .git/lfs; the remote's, for a path or file:// remote, is its own lfs/
folder (git-lfs's standalone layout); any other remote's is an LFS server reached over
HTTP(S) (http.py), at the endpoint endpoint.py finds. The git remote's credentials go
to that server only when endpoint.may_authenticate allows it.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterable
from typing import Callable, Optional

from gitfs.lfs import attributes, endpoint
from gitfs.lfs.content import LfsContent, lfs_of
from gitfs.lfs.http import HttpTransfer, ssl_context
from gitfs.lfs.ssh import SshAuthenticator
from gitfs.lfs.store import ObjectStore, standalone_store
from gitfs.lfs.transfer import CountingTransfer, StandaloneTransfer, Transfer
from gitfs.repo.content_filter import FilterSource
from gitfs.repo.credentials import Credentials, transport_of, url_credentials
from gitfs.repo.filemodes import GIT_DIR
from gitfs.repo.refnames import branch_ref
from gitfs.repo.remote.server_text import redact_url

log = logging.getLogger(__name__)


def _content(repo: FilterSource, remote_url: str, *, credentials: Optional[Credentials], url_option: str,
             on_missing: Optional[Callable[[str, str, str], None]], on_found: Optional[Callable[[str], None]],
             on_transfer: Optional[Callable[[str, int, int], None]]) -> LfsContent:
    """The mount's LFS content: the clone's store, and the transfer to the remote's."""
    where = endpoint.find(repo, remote_url, url_option)
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
    return LfsContent(local, transfer, repo, on_missing=on_missing, on_found=on_found)


class LfsRules:
    """Whether the mount uses Git LFS: from the start if a .gitattributes of the branch
    tip has a filter=lfs rule, else from the moment one the working tree gets (from the
    remote, or written through the mount) has one: teams adopt LFS when the first big
    file hurts, and a file written under the rule must be committed as a pointer from
    then on. Never turned off while mounted: pointers committed under a rule removed
    since still read as their content. Sync worker only, after `start`."""

    def __init__(self, repo: FilterSource, make: Callable[[], LfsContent], *, enabled: bool):
        self.repo = repo
        self._make = make  # the LfsContent, with the mount's options and callbacks
        self._enabled = enabled

    def start(self) -> None:
        """At mount: LFS on if the branch tip's rules ask for it."""
        if self._enabled and attributes.tip_uses_lfs(self.repo):
            self.repo.content_filter = self._make()

    def adopted(self, changed: Iterable[str]) -> Optional[LfsContent]:
        """The LfsContent to turn on now, if the working tree's .gitattributes among the
        changed paths (relative to the root) bring the first filter=lfs rule; the caller
        turns it on (checkout.adopt)."""
        if lfs_of(self.repo) is not None or not self._enabled:
            return None
        rules = [path for path in changed if os.path.basename(path) == attributes.ATTRIBUTES_FILE]
        if not any(attributes.file_uses_lfs(self.repo.workdir, path) for path in rules):
            return None
        log.info("Git LFS: on from now, for the filter=lfs rules of %s", ", ".join(sorted(rules)))
        return self._make()


def rules_for(repo: FilterSource, remote_url: str, *, credentials: Optional[Credentials] = None, enabled: bool = True,
              url_option: str = "", on_missing: Optional[Callable[[str, str, str], None]] = None,
              on_found: Optional[Callable[[str], None]] = None,
              on_transfer: Optional[Callable[[str, int, int], None]] = None) -> LfsRules:
    """The LfsRules of a mount, which make its LfsContent with these options."""
    return LfsRules(repo, lambda: _content(repo, remote_url, credentials=credentials, url_option=url_option,
                                           on_missing=on_missing, on_found=on_found, on_transfer=on_transfer),
                    enabled=enabled)


def content_for(repo: FilterSource, remote_url: str, **options) -> Optional[LfsContent]:
    """The LfsContent of a repository whose branch has a filter=lfs rule, else None."""
    rules = rules_for(repo, remote_url, **options)
    rules.start()
    return lfs_of(repo)


def _http_transfer(repo: FilterSource, local: ObjectStore, where: endpoint.Endpoint, remote_url: str,
                   credentials: Credentials) -> Transfer:
    server = endpoint.server_url(where)
    if server is None:  # is_local said otherwise: cannot happen, but never guess a server
        raise ValueError(f"no LFS server in {where.url!r}")
    authorization = None
    if endpoint.may_authenticate(where, server, remote_url):
        url_user, url_password = url_credentials(remote_url)
        user, password = credentials.username or url_user, credentials.password or url_password
        if user or password:
            authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    ssh = None
    if where.source == endpoint.FROM_REMOTE and transport_of(remote_url) == "ssh":
        ssh = SshAuthenticator(remote_url, credentials, server)
    ca_file = os.path.abspath(os.path.expanduser(credentials.ssl_ca_file)) if credentials.ssl_ca_file else ""
    log.info("Git LFS: objects in %s, from the LFS server %s (%s)%s", local.root, redact_url(server), where.source,
             ", endpoint and token from ssh git-lfs-authenticate" if ssh else
             "" if authorization else ", without the remote's credentials")
    return HttpTransfer(local, server, ref=branch_ref(repo.branch), authorization=authorization,
                        context=ssl_context(ca_file), ssh=ssh)
