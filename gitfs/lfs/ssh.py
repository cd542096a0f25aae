"""The LFS server of an SSH remote: `ssh HOST git-lfs-authenticate PATH download|upload`.

The server answers with JSON: the endpoint to use (`href`, else the derived https one),
the headers to send it (`header`, a token usually) and how long they hold
(`expires_in` seconds or `expires_at`). Exit status 127 means the server has no such
command: the caller then falls back to the derived https endpoint, without credentials.

This runs the OpenSSH client program (libgit2's libssh2 runs no commands of ours), with
the mount's SSH settings: its key (else the agent and ~/.ssh's keys), its known_hosts
file and strict host key checking, BatchMode (never a prompt). A key with a passphrase
works through the agent only. Answers are kept per operation until shortly before they
expire; one lock keeps concurrent callers to one ssh at a time.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional

from gitfs.lfs.errors import LfsError
from gitfs.repo.credentials import Credentials, host_and_port, known_hosts_path
from gitfs.repo.remote.server_text import redact_url, server_words

log = logging.getLogger(__name__)

SSH_TIMEOUT = 30.0  # seconds for the whole ssh command
NOT_SUPPORTED = 127  # the server has no git-lfs-authenticate
KEEP_DEFAULT = 300.0  # seconds an answer without expiry is kept
EXPIRY_MARGIN = 10.0


class AuthenticateFailed(LfsError):
    """ssh git-lfs-authenticate failed (other than "not supported")."""


@dataclass(frozen=True)
class Grant:
    href: str  # the endpoint
    header: dict[str, str] = field(repr=False)  # sent to href only
    until: float  # time.monotonic() after which it is asked for again


def remote_path(url: str) -> str:
    """The repository path git-lfs names to the server: ssh://host/o/r.git -> /o/r.git,
    host:o/r.git -> o/r.git."""
    if "://" in url:
        rest = url.split("://", 1)[1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return url.split(":", 1)[1]


class SshAuthenticator:
    def __init__(self, remote_url: str, credentials: Credentials, fallback: str):
        self.remote_url = remote_url
        self.fallback = fallback  # the derived https endpoint, for an answer without href
        self._credentials = credentials
        self._grants: dict[str, Optional[Grant]] = {}  # operation -> grant, None: not supported
        self._lock = threading.Lock()

    def grant(self, operation: str) -> Optional[Grant]:
        """The endpoint and headers for operation; None if the server has no
        git-lfs-authenticate. AuthenticateFailed if ssh failed otherwise."""
        with self._lock:
            if operation in self._grants:
                known = self._grants[operation]
                if known is None or known.until > time.monotonic():
                    return known
            got = self._ask(operation)
            self._grants[operation] = got
            return got

    def command(self, operation: str) -> list[str]:
        host, port, user = host_and_port(self.remote_url)
        creds = self._credentials
        user = creds.ssh_user or user or os.environ.get("USER") or "git"
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(SSH_TIMEOUT)}",
                "-o", f"UserKnownHostsFile={known_hosts_path(creds)}",
                "-o", f"StrictHostKeyChecking={'yes' if creds.ssh_strict_host_key_checking else 'no'}",
                "-p", str(port)]
        if creds.ssh_key:
            argv += ["-i", os.path.expanduser(creds.ssh_key), "-o", "IdentitiesOnly=yes"]
        path = remote_path(self.remote_url).replace("'", "'\\''")
        return [*argv, "-l", user, "--", host, f"git-lfs-authenticate '{path}' {operation}"]

    def _ask(self, operation: str) -> Optional[Grant]:
        try:
            result = subprocess.run(self.command(operation), stdin=subprocess.DEVNULL, capture_output=True,
                                    timeout=SSH_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise AuthenticateFailed(f"ssh git-lfs-authenticate: {error}") from None
        if result.returncode == NOT_SUPPORTED:
            log.info("Git LFS: the SSH server has no git-lfs-authenticate; using %s", redact_url(self.fallback))
            return None
        if result.returncode != 0:
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            why = server_words(lines[-1]) if lines else f"exit status {result.returncode}"
            raise AuthenticateFailed(f"ssh git-lfs-authenticate {operation} failed: {why}")
        try:
            answer = json.loads(result.stdout)
            header = {str(k): str(v) for k, v in (answer.get("header") or {}).items()}
            href = str(answer.get("href") or self.fallback).rstrip("/")
        except (ValueError, AttributeError, TypeError):
            raise AuthenticateFailed("ssh git-lfs-authenticate answered something else than JSON") from None
        return Grant(href, header, time.monotonic() + _lifetime(answer))


def _lifetime(answer: dict) -> float:
    seconds = KEEP_DEFAULT
    if isinstance(answer.get("expires_in"), (int, float)):
        seconds = float(answer["expires_in"])
    elif isinstance(answer.get("expires_at"), str):
        try:
            at = datetime.fromisoformat(answer["expires_at"].replace("Z", "+00:00"))
            seconds = (at - datetime.now(timezone.utc)).total_seconds()
        except (ValueError, TypeError):
            pass
    return max(min(seconds, KEEP_DEFAULT) - EXPIRY_MARGIN, 0.0)
