"""`-o` option parsing: typed, with the original GitFS's names and defaults.

Parsing has no side effects: nothing is created, opened or resolved here except
the current user's name (a default). `daemon.py` turns the result into a mount.
"""

from __future__ import annotations

import dataclasses
import getpass
import grp
import os
import socket
import typing
from typing import Any, Optional

from gitfs.errors import FatalError
from gitfs.optiontable import help_text

TRUE_WORDS = {"true", "yes", "1", "on"}
FALSE_WORDS = {"false", "no", "0", "off"}

# Words mount(8) and mount.fuse3 add to the option string; accepted so that fstab
# lines and `mount -t fuse.gitfs` work. Only `ro` changes anything (a read-only mount).
MOUNT_WORDS = {
    "rw", "ro", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
    "dev", "nodev", "suid", "nosuid", "exec", "noexec", "defaults", "async",
    "atime", "noatime", "relatime", "norelatime", "strictatime", "lazytime",
    "nodiratime", "diratime", "owner", "group", "comment",
}
MOUNT_WORD_PREFIXES = ("x-systemd.", "x-", "comment=")

ALIASES = {"merge_timeout": "sync_timeout", "key": "ssh_key"}
# Documented options whose field has another name: `ro` (a mount word too) sets read_only.
WORD_OPTIONS = {"ro": "read_only"}


@dataclasses.dataclass(frozen=True)
class Options:
    remote_url: str = ""
    mount_point: str = ""
    repo_path: Optional[str] = None  # None: derived from remote_url (clone.default_repo_path)
    branch: Optional[str] = None  # None: the remote's default branch
    user: str = ""
    group: str = ""
    commiter_name: str = ""
    commiter_email: str = ""
    max_size: float = 10.0  # MiB; 0 means unlimited
    lfs: bool = True  # Git LFS, when the branch's .gitattributes has a filter=lfs rule
    lfs_url: str = ""  # "" = where git-lfs would look (gitfs/lfs/setup.py)
    sync_timeout: float = 5.0
    max_sync_delay: float = -1.0  # -1: ten sync_timeouts (at least 1 s), set by _defaults
    fetch_timeout: float = 30.0
    idle_fetch_timeout: float = 1800.0
    min_idle_times: float = 10.0
    log: str = "syslog"
    log_level: str = "warning"
    debug: bool = False
    foreground: bool = False
    allow_other: bool = False
    allow_root: bool = False
    cache_size: int = 800
    ignore_file: str = ""
    hard_ignore: str = ""
    default_ignore: bool = True  # the default rules for editors' and desktops' files (repo/workdir/ignore.py)
    xattr: bool = False  # current/ keeps user.* xattrs (repo/workdir/user_attributes.py); off: router.py says why
    max_open_files: int = -1
    history_path: str = "history"
    current_path: str = "current"
    username: str = ""
    password: str = ""  # shows in ps: password_file or $GITFS_PASSWORD keep it out
    password_file: str = ""
    ssh_key: str = ""
    ssh_user: str = ""
    ssh_public_key: str = ""  # "" = KEY.pub if present, else derived from the private key
    ssh_key_passphrase: str = ""
    ssh_key_passphrase_file: str = ""
    ssh_known_hosts: str = ""  # "" = ~/.ssh/known_hosts
    ssh_strict_host_key_checking: bool = True
    ssl_ca_file: str = ""
    sentry_dsn: str = ""  # accepted for compatibility; GitFS sends nothing anywhere
    read_only: bool = False  # the mount word `ro`

    @property
    def max_size_bytes(self) -> Optional[int]:
        return int(self.max_size * 1024 * 1024) if self.max_size > 0 else None


_FIELDS = {f.name: f for f in dataclasses.fields(Options)}
_TYPES = typing.get_type_hints(Options)  # the fields' types as types, not annotation strings
_NOT_OPTIONS = {"remote_url", "mount_point", "read_only"}
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
MAX_CACHE_SIZE = 1_000_000  # views are small; beyond this a typo, not a wish


def _convert(name: str, raw: str, kind: type):
    if kind is bool:
        word = raw.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise FatalError(f"option {name}: expected true/false/yes/no/1/0, got {raw!r}")
    if kind in (int, float):
        try:
            value = kind(raw)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise FatalError(f"option {name}: expected {what}, got {raw!r}") from None
        if kind is float and not (value == value and value not in (float("inf"),)):
            raise FatalError(f"option {name}: expected a finite number, got {raw!r}")
        return value
    return raw


def _kind(name: str) -> type:
    kind = _TYPES[name]
    return kind if kind in (bool, int, float) else str  # Optional[str] and str take the text


def split_option_string(text: str) -> list[str]:
    """Split `a=1,b,c=x\\,y` on unescaped commas (a backslash escapes a comma)."""
    items, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item for item in items if item.strip()]


def parse_options(remote_url: str, mount_point: str, option_strings: list[str]) -> Options:
    """Build Options from the positional arguments and every `-o` string given."""
    given: dict[str, Any] = {}
    read_only = False
    for text in option_strings:
        for item in split_option_string(text):
            name, has_value, raw = item.partition("=")
            name = name.strip()
            if name == "ro":  # wherever it comes, a later `rw` (fstab's defaults) does not undo it
                read_only = read_only or (_convert(name, raw, bool) if has_value else True)
                continue
            if not has_value and name in MOUNT_WORDS and name not in _FIELDS or name == "rw":
                continue
            if name.startswith(MOUNT_WORD_PREFIXES):
                continue
            name = ALIASES.get(name, name)
            if name not in _FIELDS or name in _NOT_OPTIONS:
                raise FatalError(f"unknown option {name!r} (see gitfs --help)")
            kind = _kind(name)
            if not has_value:
                if kind is not bool:
                    if name in MOUNT_WORDS:  # bare `user`/`group` are mount words
                        continue
                    raise FatalError(f"option {name} needs a value ({name}=...)")
                given[name] = True
                continue
            given[name] = _convert(name, raw, kind)
    options = Options(remote_url=remote_url, mount_point=mount_point, read_only=read_only, **given)
    _validate(options)
    return dataclasses.replace(options, **_defaults(options))


def _validate(options: Options) -> None:
    for name in ("max_size", "sync_timeout", "fetch_timeout", "idle_fetch_timeout", "min_idle_times"):
        if getattr(options, name) < 0:
            raise FatalError(f"option {name}: must not be negative")
    if options.max_sync_delay != -1 and options.max_sync_delay <= 0:
        raise FatalError("option max_sync_delay: must be a positive number of seconds")
    if not 1 <= options.cache_size <= MAX_CACHE_SIZE:
        raise FatalError(f"option cache_size: must be between 1 and {MAX_CACHE_SIZE}")
    if options.max_open_files < -1 or options.max_open_files == 0:
        raise FatalError("option max_open_files: must be -1 (unchanged) or a positive number")
    if options.log_level.lower() not in LOG_LEVELS:
        raise FatalError(f"option log_level: expected one of {', '.join(LOG_LEVELS)}, got {options.log_level!r}")
    for name in ("history_path", "current_path"):
        value = getattr(options, name).strip("/")
        if name == "history_path" and not value or "/" in value or value in (".", ".."):
            raise FatalError(f"option {name}: must be a single directory name")
    if options.current_path.strip("/") == options.history_path.strip("/"):
        raise FatalError("options current_path and history_path must differ")
    if options.branch is not None and not options.branch.strip():
        raise FatalError("option branch: must not be empty")
    for secret in ("password", "ssh_key_passphrase"):
        if getattr(options, secret) and getattr(options, secret + "_file"):
            raise FatalError(f"options {secret} and {secret}_file: give only one")
    if not options.remote_url:
        raise FatalError("missing REMOTE_URL")
    if not options.mount_point:
        raise FatalError("missing MOUNTPOINT")


def _defaults(options: Options) -> dict[str, Any]:
    """The values that follow from the options given and the environment."""
    user = options.user or getpass.getuser()
    group = options.group
    if not group:
        try:
            group = grp.getgrgid(os.getegid()).gr_name
        except KeyError:
            group = str(os.getegid())
    values: dict[str, Any] = {
        "log_level": "debug" if options.debug else options.log_level.lower(),
        "history_path": options.history_path.strip("/"),
        "current_path": options.current_path.strip("/"),  # "" puts the tree at the root
        "user": user, "group": group,
        "commiter_name": options.commiter_name or user,
        "commiter_email": options.commiter_email or f"{user}@{socket.gethostname()}",
        "mount_point": os.path.abspath(options.mount_point),
        "max_sync_delay": options.max_sync_delay if options.max_sync_delay != -1 else
        max(10 * options.sync_timeout, 1.0),
    }
    if options.repo_path:
        values["repo_path"] = os.path.abspath(os.path.expanduser(options.repo_path))
    if options.log not in ("syslog", "-"):  # the daemon must not depend on the directory it started in
        values["log"] = os.path.abspath(os.path.expanduser(options.log))
    return values


HELP = help_text()  # from the option table shared with the manual page and the README
