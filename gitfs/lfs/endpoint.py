"""Where a mount's LFS objects are: the endpoint, found where git-lfs finds it.

In order: the `lfs_url` option; the clone's git config (`lfs.url`, then
`remote.origin.lfsurl`); the same keys in a committed `.lfsconfig` (only these: a
`.lfsconfig` is written by whoever can push, and git-lfs honours few of its keys);
else the remote itself. An endpoint that is a path or file:// URL is a repository whose
lfs/ folder holds the objects (git-lfs's standalone layout); a committed `.lfsconfig` may
name one only for a remote that is itself a path: someone who can push to a server must
not make the daemon write into folders of the machine it runs on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pygit2

from gitfs.lfs.store import is_local
from gitfs.repo.repository import REMOTE_NAME

LFSCONFIG = ".lfsconfig"
_KEYS = ("lfs.url", f"remote.{REMOTE_NAME}.lfsurl")


@dataclass(frozen=True)
class Endpoint:
    url: str
    source: str  # where it was found, for the log: "option lfs_url", ".lfsconfig", ...


def find(git: pygit2.Repository, workdir: str, remote_url: str, option: str = "") -> Endpoint:
    if option:
        return Endpoint(option, "option lfs_url")
    for key in _KEYS:
        value = _config_value(git.config, key)
        if value:
            return Endpoint(value, f"git config {key}")
    path = os.path.join(workdir, LFSCONFIG)
    if os.path.isfile(path) and not os.path.islink(path):
        try:
            committed = pygit2.Config(path)
        except pygit2.GitError:
            committed = None
        for key in _KEYS if committed is not None else ():
            value = _config_value(committed, key)
            if value and (not is_local(value) or is_local(remote_url)):
                return Endpoint(value, f"{LFSCONFIG} {key}")
    return Endpoint(remote_url, "the remote")


def _config_value(config, key: str) -> str:
    try:
        return str(config[key])
    except (KeyError, pygit2.GitError, ValueError):
        return ""
