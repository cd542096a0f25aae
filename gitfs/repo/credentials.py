"""Credentials for clone, fetch and push: what to offer a server, and whom to trust.

How the transports behave with this pygit2 (libgit2 1.9, libssh2 1.11, OpenSSL):

- SSH is libssh2 inside libgit2 (no ssh program is run). libgit2 checks the server's
  host key against HOMEDIR/.ssh/known_hosts (libgit2's HOMEDIR option, `$HOME` by
  default) and hands the verdict to the certificate callback as `valid`; pygit2 gives
  the callback no key (`certificate` is None) and, without a callback, lets every SSH
  host key through. So GitFS sets HOMEDIR to a directory whose `.ssh/known_hosts` is
  the file to trust (`~/.ssh/known_hosts`, or a link to `ssh_known_hosts=FILE`) and
  refuses the connection when `valid` is false, unless ssh_strict_host_key_checking=no.
  Whether the host is unknown or its key changed is told by reading the file here
  (plain and hashed host names).
- HTTPS is OpenSSL inside libgit2: `valid` is its verdict on the certificate chain and
  host name; `ssl_ca_file` adds a CA to its trust store.
- libgit2 asks the credentials callback again after every refusal; `_Callbacks` offers
  each candidate once and then raises AuthenticationError, so nothing loops.

Secrets (password, passphrase) live only in `Credentials` (kept out of its repr) and
are handed to libgit2; nothing here logs them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import unquote, urlsplit

import pygit2

from gitfs.repo.compat import CredentialType
from gitfs.repo.errors import RemoteError, SettingError
from gitfs.repo.private_dirs import make_private_dirs

log = logging.getLogger(__name__)

DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")
PASSWORD_ENV = "GITFS_PASSWORD"
PASSPHRASE_ENV = "GITFS_SSH_KEY_PASSPHRASE"


class AuthenticationError(RemoteError):
    """The server refused the credentials, or asked for some and none were given."""


class HostKeyError(RemoteError):
    """The SSH host key is unknown or changed, or the TLS certificate is not trusted."""


@dataclass(frozen=True)
class Credentials:
    """Everything needed to talk to the remote, resolved at mount time (files read, env looked up)."""

    username: str = ""
    password: str = field(default="", repr=False)
    ssh_key: str = ""
    ssh_user: str = ""
    ssh_public_key: str = ""
    ssh_key_passphrase: str = field(default="", repr=False)
    ssh_known_hosts: str = ""  # "" = ~/.ssh/known_hosts
    ssh_strict_host_key_checking: bool = True
    ssl_ca_file: str = ""
    state_dir: str = ""  # where a link to ssh_known_hosts may be kept (private to the user)


def read_secret(path: str, what: str) -> str:
    """The first line of a secret file (a password file ends in a newline more often than not)."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise SettingError(f"cannot read {what} {path}: {error.strerror}") from None
    return text.splitlines()[0] if text else ""


def key_is_encrypted(path: str) -> bool:
    """Whether a private key file needs a passphrase (OpenSSH and PEM formats)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    if b"ENCRYPTED" in text:  # PEM: Proc-Type: 4,ENCRYPTED or BEGIN ENCRYPTED PRIVATE KEY
        return True
    begin, end = b"-----BEGIN OPENSSH PRIVATE KEY-----", b"-----END OPENSSH PRIVATE KEY-----"
    if begin not in text:
        return False
    try:
        blob = base64.b64decode(text.split(begin, 1)[1].split(end, 1)[0])
        magic = b"openssh-key-v1\0"
        (length,) = struct.unpack(">I", blob[len(magic):len(magic) + 4])
        cipher = blob[len(magic) + 4:len(magic) + 4 + length]
    except (ValueError, struct.error):
        return False
    return cipher != b"none"


def agent_has_keys() -> bool:
    """Whether $SSH_AUTH_SOCK answers with at least one identity (libgit2 would fail, not move on)."""
    path = os.environ.get("SSH_AUTH_SOCK")
    if not path:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(path)
            sock.sendall(struct.pack(">IB", 1, 11))  # SSH_AGENTC_REQUEST_IDENTITIES
            header = sock.recv(9)
    except OSError:
        return False
    if len(header) < 9 or header[4] != 12:  # SSH_AGENT_IDENTITIES_ANSWER
        return False
    return struct.unpack(">I", header[5:9])[0] > 0


# -- known_hosts ------------------------------------------------------------------------------

def known_hosts_path(credentials: Credentials) -> str:
    return os.path.abspath(os.path.expanduser(credentials.ssh_known_hosts or "~/.ssh/known_hosts"))


def _host_matches(pattern: str, name: str) -> bool:
    if pattern.startswith("|1|"):
        try:
            salt, digest = (base64.b64decode(part) for part in pattern[3:].split("|", 1))
        except ValueError:
            return False
        return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)
    return pattern == name


def host_is_known(path: str, host: str, port: int) -> bool:
    """Whether known_hosts has any key for host:port (whatever the key)."""
    name = host if port == 22 else f"[{host}]:{port}"
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0].startswith("@"):  # @cert-authority / @revoked
            fields = fields[1:]
        if fields and any(_host_matches(pattern, name) for pattern in fields[0].split(",")):
            return True
    return False


def ssh_home_for(credentials: Credentials) -> str:
    """A directory whose .ssh/known_hosts is the file to trust (libgit2 looks there)."""
    path = known_hosts_path(credentials)
    parent = os.path.dirname(path)
    if os.path.basename(path) == "known_hosts" and os.path.basename(parent) == ".ssh":
        return os.path.dirname(parent)
    base = credentials.state_dir or os.path.expanduser("~/.cache/gitfs")
    home = os.path.join(base, "known-hosts", hashlib.sha1(path.encode()).hexdigest()[:12])
    link = os.path.join(home, ".ssh", "known_hosts")
    make_private_dirs(os.path.dirname(link))
    if not (os.path.islink(link) and os.readlink(link) == path):
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(path, link)
    return home


# -- URLs -----------------------------------------------------------------------------------------

def url_credentials(url: str) -> tuple[str, str]:
    """(user, password) written in a URL (scheme://user:password@host/...), unquoted."""
    if "://" not in url:
        return "", ""
    parts = urlsplit(url)
    return unquote(parts.username or ""), unquote(parts.password or "")


def transport_of(url: str) -> str:
    """ssh, https, http, git, file or local (a path)."""
    if "://" in url:
        scheme = url.split("://", 1)[0].lower()
        return {"ssh+git": "ssh", "git+ssh": "ssh"}.get(scheme, scheme)
    head = url.split("/", 1)[0]
    return "ssh" if ":" in head else "local"  # scp-like [user@]host:path


def host_and_port(url: str) -> tuple[str, int, str]:
    """(host, port, user) of a network URL, scp-like included."""
    if "://" in url:
        parts = urlsplit(url)
        default = {"ssh": 22, "https": 443, "http": 80, "git": 9418}.get(transport_of(url), 0)
        try:
            port = parts.port or default
        except ValueError:
            port = default
        return parts.hostname or "", port, parts.username or ""
    user, _, rest = url.partition("@") if "@" in url.split(":", 1)[0] else ("", "", url)
    host = rest.split(":", 1)[0].strip("[]")
    return host, 22, user


# -- the callbacks -------------------------------------------------------------------------------

_warned_unverified: set[str] = set()


class _Callbacks(pygit2.RemoteCallbacks):
    """Offers each credential once; checks host keys and certificates; records refused refs."""

    def __init__(self, credentials: Credentials, url: str):
        super().__init__()
        self._credentials = credentials
        self._url = url
        self._transport = transport_of(url)
        self._ssh_candidates: Optional[list[tuple[str, object]]] = None
        self._tried: list[str] = []
        self._userpass_offered = False
        self._asked = 0
        self.rejected: dict[str, str] = {}

    # -- who we are

    def credentials(self, url, username_from_url, allowed_types):
        self._asked += 1
        if self._asked > 10:  # never loop, whatever the server does
            raise AuthenticationError(f"the server at {self._where()} keeps refusing the credentials")
        kinds = CredentialType
        if allowed_types & kinds.SSH_KEY:
            return self._next_ssh_key(username_from_url)
        if allowed_types & kinds.USERPASS_PLAINTEXT:
            return self._userpass(username_from_url)
        if allowed_types & kinds.USERNAME:
            return pygit2.Username(self._ssh_user(username_from_url))
        raise AuthenticationError(f"the server at {self._where()} asks for a kind of credentials GitFS "
                                  f"does not offer")

    def _where(self) -> str:
        host, port, _user = host_and_port(self._url)
        return f"{host}:{port}" if port else host

    def _ssh_user(self, username_from_url) -> str:
        return self._credentials.ssh_user or username_from_url or os.environ.get("USER") or "git"

    def _next_ssh_key(self, username_from_url):
        user = self._ssh_user(username_from_url)
        if self._ssh_candidates is None:
            self._ssh_candidates = self._ssh_key_candidates(user)
            if not self._ssh_candidates:
                raise AuthenticationError(
                    "no SSH key to offer: give ssh_key=FILE, start ssh-agent with a key, or create "
                    "~/.ssh/id_ed25519")
        if not self._ssh_candidates:
            hint = ""
            if self._credentials.ssh_key and self._credentials.ssh_key_passphrase:
                hint = "; wrong ssh_key_passphrase, or the key is not authorized there"
            raise AuthenticationError(f"the server at {self._where()} refused SSH authentication as {user!r} "
                                      f"(tried {', '.join(self._tried)}{hint})")
        name, credential = self._ssh_candidates.pop(0)
        self._tried.append(name)
        log.debug("offering %s to %s as %s", name, self._where(), user)
        return credential

    def _ssh_key_candidates(self, user: str) -> list[tuple[str, object]]:
        creds = self._credentials
        passphrase = creds.ssh_key_passphrase
        if creds.ssh_key:
            key = os.path.expanduser(creds.ssh_key)
            public = os.path.expanduser(creds.ssh_public_key) if creds.ssh_public_key else (
                key + ".pub" if os.path.exists(key + ".pub") else None)
            return [(f"key {creds.ssh_key}", pygit2.Keypair(user, public, key, passphrase))]
        candidates: list[tuple[str, object]] = []
        if agent_has_keys():
            candidates.append(("ssh-agent", pygit2.KeypairFromAgent(user)))
        for name in DEFAULT_KEYS:
            key = os.path.expanduser(f"~/.ssh/{name}")
            if not os.path.isfile(key) or (key_is_encrypted(key) and not passphrase):
                continue
            public = key + ".pub" if os.path.exists(key + ".pub") else None
            candidates.append((f"~/.ssh/{name}", pygit2.Keypair(user, public, key, passphrase)))
        return candidates

    def _userpass(self, username_from_url):
        creds = self._credentials
        user = creds.username or username_from_url or ""
        if not creds.password:
            raise AuthenticationError(
                f"the server at {self._where()} asks for a username and password: give username= and "
                f"password_file=FILE (or the {PASSWORD_ENV} environment variable)")
        if self._userpass_offered:
            raise AuthenticationError(f"the server at {self._where()} refused the password for user {user!r}")
        self._userpass_offered = True
        return pygit2.UserPass(user, creds.password)

    # -- whom we trust

    def certificate_check(self, certificate, valid, host):
        host = host.decode(errors="replace") if isinstance(host, bytes) else str(host)
        if valid:
            return True
        if self._transport == "ssh":
            return self._unverified_host_key(host)
        raise HostKeyError(f"the TLS certificate of {host} is not trusted (expired, wrong name or unknown CA; "
                           f"give ssl_ca_file=FILE for a private CA)")

    def _unverified_host_key(self, host: str) -> bool:
        creds = self._credentials
        _host, port, _user = host_and_port(self._url)
        path = known_hosts_path(creds)
        if not creds.ssh_strict_host_key_checking:
            if host not in _warned_unverified:
                _warned_unverified.add(host)
                log.warning("the SSH host key of %s is not checked (ssh_strict_host_key_checking=no)", host)
            return True
        shown = host if port == 22 else f"[{host}]:{port}"
        if host_is_known(path, host, port):
            raise HostKeyError(f"the SSH host key of {shown} does not match {path}: it CHANGED (possibly an "
                               f"attack); if the change is expected, remove the old key with "
                               f"ssh-keygen -R '{shown}' -f {path}")
        raise HostKeyError(f"the SSH host key of {shown} is unknown: it is not in {path} (add it, e.g. with "
                           f"ssh-keyscan -p {port} {host} >> {path} after checking it, or give "
                           f"ssh_known_hosts=FILE; ssh_strict_host_key_checking=no skips the check)")

    # -- push results

    def push_update_reference(self, refname, message):
        if message:
            self.rejected[refname] = message


def check(credentials: Credentials, url: str) -> None:
    """Mistakes visible before any connection: missing files, an encrypted key without a passphrase.

    Only the options of the URL's transport are checked (an fstab line may carry others)."""
    transport = transport_of(url)
    if transport == "https" and credentials.ssl_ca_file and not os.path.isfile(
            os.path.expanduser(credentials.ssl_ca_file)):
        raise SettingError(f"ssl_ca_file {credentials.ssl_ca_file} does not exist")
    if transport != "ssh":
        return
    if credentials.ssh_key:
        key = os.path.expanduser(credentials.ssh_key)
        if not os.path.isfile(key):
            raise SettingError(f"ssh_key {credentials.ssh_key} does not exist")
        if not os.access(key, os.R_OK):
            raise SettingError(f"ssh_key {credentials.ssh_key} is not readable")
        if key_is_encrypted(key) and not credentials.ssh_key_passphrase:
            raise SettingError(f"ssh_key {credentials.ssh_key} is protected by a passphrase: give "
                              f"ssh_key_passphrase_file=FILE (or {PASSPHRASE_ENV})")
    url_user = host_and_port(url)[2]
    if credentials.ssh_user and url_user and credentials.ssh_user != url_user:
        raise SettingError(f"ssh_user={credentials.ssh_user} differs from the user in the URL ({url_user}): "
                          f"give only one")
    if credentials.ssh_public_key and not os.path.isfile(os.path.expanduser(credentials.ssh_public_key)):
        raise SettingError(f"ssh_public_key {credentials.ssh_public_key} does not exist")
    if credentials.ssh_known_hosts and not os.path.isfile(os.path.expanduser(credentials.ssh_known_hosts)):
        raise SettingError(f"ssh_known_hosts {credentials.ssh_known_hosts} does not exist")
