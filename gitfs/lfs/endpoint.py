"""Where a mount's LFS objects are: the endpoint, found where git-lfs finds it.

In order: the `lfs_url` option; the clone's git config (`lfs.url`, then
`remote.origin.lfsurl`); the same keys in a committed `.lfsconfig` (only these: a
`.lfsconfig` is written by whoever can push, and git-lfs honours few of its keys);
else the remote itself (server_url derives the LFS endpoint from it). An endpoint
that is a path or file:// URL is a repository whose lfs/ folder holds the objects
(git-lfs's standalone layout); a committed `.lfsconfig` may name one only for a
remote that is itself a path: someone who can push to a server must not make the
daemon write into folders of the machine it runs on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

from gitfs.lfs.store import is_local
from gitfs.repo.content_filter import FilterSource
from gitfs.repo.refnames import REMOTE_NAME

LFSCONFIG = ".lfsconfig"
_KEYS = ("lfs.url", f"remote.{REMOTE_NAME}.lfsurl")
FROM_OPTION = "option lfs_url"
FROM_REMOTE = "the remote"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Endpoint:
    url: str
    source: str  # where it was found, for the log: "option lfs_url", ".lfsconfig", ...


def find(source: FilterSource, remote_url: str, option: str = "") -> Endpoint:
    if option:
        return Endpoint(option, FROM_OPTION)
    for key in _KEYS:
        value = source.config_value(key)
        if value:
            return Endpoint(value, f"git config {key}")
    path = os.path.join(source.workdir, LFSCONFIG)
    if os.path.isfile(path) and not os.path.islink(path):
        for key in _KEYS:
            value = source.config_value(key, file=path)
            if value and (not is_local(value) or is_local(remote_url)):
                return Endpoint(value, f"{LFSCONFIG} {key}")
    return Endpoint(remote_url, FROM_REMOTE)


def server_url(where: Endpoint) -> Optional[str]:
    """The https(s) endpoint to send batch requests to, None for a path or file:// one.

    A remote's URL gives git-lfs's derived endpoint: https://host/o/r(.git) ->
    https://host/o/r.git/info/lfs; ssh://[user@]host[:port]/o/r.git, user@host:o/r.git
    and git://host/o/r.git -> https://host/o/r.git/info/lfs (the port is the ssh
    server's, not the web server's: dropped). An endpoint given as such (an option, a
    config key) is used as it is, an ssh one made https the same way."""
    url = where.url
    if is_local(url):
        return None
    derived = where.source == FROM_REMOTE
    if "://" in url:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        if scheme in ("http", "https"):
            netloc = host if parts.port is None else f"{host}:{parts.port}"
            if ":" in host:
                netloc = f"[{host}]" if parts.port is None else f"[{host}]:{parts.port}"
            path = parts.path.rstrip("/")
            if not derived:
                return urlunsplit((scheme, netloc, path, parts.query, ""))
            return urlunsplit((scheme, netloc, _lfs_path(path, derived), "", ""))
        path = parts.path
    else:  # scp-like [user@]host:path
        head, _colon, path = url.partition(":")
        host = head.rpartition("@")[2].strip("[]")
    netloc = f"[{host}]" if ":" in host else host
    path = "/" + path.strip("/")
    return urlunsplit(("https", netloc, _lfs_path(path.rstrip("/"), derived), "", ""))


def _lfs_path(path: str, derived: bool) -> str:
    if not derived:
        return path
    return (path if path.endswith(".git") else path + ".git") + "/info/lfs"


def origin(url: str) -> tuple[str, str, Optional[int]]:
    """(scheme, host, port) of a network URL, the port filled in for http and https."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def may_authenticate(where: Endpoint, server: str, remote_url: str) -> bool:
    """Whether the git remote's credentials may go to the server: only when it is on the
    remote's own scheme, host and port, or was given with the lfs_url option. A
    .lfsconfig anyone who can push may commit, and a clone's config may have come from
    elsewhere: neither may send the password to another host."""
    if where.source == FROM_OPTION:
        return True
    return "://" in remote_url and origin(server) == origin(remote_url)

