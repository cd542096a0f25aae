"""The one table of `-o` options: `gitfs --help`, the manual page (gitfs/manpage.py)
and the README's option table are all made from it, so they cannot disagree.

Text may hold `code` in backticks: kept in the README, bold in the manual page,
plain in --help. tests/cli/test_docs.py checks that every option and its default
appear in all three, and that every option options.py accepts is here.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class OptionDoc:
    name: str
    value: str  # what it takes, e.g. SEC; "" for a flag (alone means true)
    default: str
    text: str
    alias: str = ""
    remote: bool = False  # listed under "remotes and credentials"


OPTIONS = (
    OptionDoc("repo_path", "DIR", "`/var/lib/gitfs/<name>-<hash>` as root, `~/.cache/gitfs/<name>-<hash>` otherwise",
              "where the clone lives; an existing clone of the same remote is reused (fetched), never deleted"),
    OptionDoc("branch", "NAME", "the remote's default branch", "the branch mounted, followed and pushed"),
    OptionDoc("sync_timeout", "SEC", "`5`", "seconds of quiet before changes are committed and pushed",
              alias="merge_timeout"),
    OptionDoc("max_sync_delay", "SEC", "ten times `sync_timeout`",
              "the longest a change waits for quiet: past it, everything is committed and pushed however "
              "busy the mount, files being written too, as they stand between two writes"),
    OptionDoc("fetch_timeout", "SEC", "`30`", "seconds between fetches while the mount is in use"),
    OptionDoc("idle_fetch_timeout", "SEC", "`1800`", "seconds between fetches while idle"),
    OptionDoc("min_idle_times", "N", "`10`", "idle after this many quiet `sync_timeout` periods"),
    OptionDoc("max_size", "MiB", "`10`", "largest file that can be written, in MiB (EFBIG past it); `0` = no limit"),
    OptionDoc("lfs", "", "`true`",
              "Git LFS: files under a `filter=lfs` rule show and take their content, kept in the LFS store; "
              "on when the branch's `.gitattributes` has such a rule; `false` shows the pointers as they are"),
    OptionDoc("lfs_url", "URL", "`lfs.url` of the clone, else of a committed `.lfsconfig`, else the remote",
              "where the LFS objects are: an LFS server's `https://` endpoint (it gets the remote's "
              "credentials), or a path or `file://` URL of a repository whose `lfs/` holds them"),
    OptionDoc("commiter_name", "NAME", "the `user` option", "author and committer name of GitFS's commits"),
    OptionDoc("commiter_email", "EMAIL", "`user@hostname`", "author and committer email"),
    OptionDoc("user", "NAME", "the current user", "owner shown for every file (name or number)"),
    OptionDoc("group", "NAME", "the current group", "group shown for every file (name or number)"),
    OptionDoc("allow_other", "", "`false`",
              "let other users use the mount (FUSE `allow_other`, with `default_permissions`)"),
    OptionDoc("allow_root", "", "`false`", "let root use the mount"),
    OptionDoc("foreground", "", "`false`",
              "stay attached (also `-f`); logs go to stderr unless `log` says otherwise"),
    OptionDoc("log", "WHERE", "`syslog`", "`syslog`, a file path, or `-` for stderr"),
    OptionDoc("log_level", "LEVEL", "`warning`", "`debug`, `info`, `warning`, `error`, `critical`"),
    OptionDoc("debug", "", "`false`", "same as `log_level=debug`"),
    OptionDoc("cache_size", "N", "`800`", "number of history folders kept resolved in memory"),
    OptionDoc("ignore_file", "FILE", "none", "a gitignore-style file of extra patterns, never committed"),
    OptionDoc("hard_ignore", "P1|P2", "none", "extra patterns separated by `|`"),
    OptionDoc("default_ignore", "true|false", "`true`",
              "never commit the temporary, lock and backup files of editors and office suites, nor desktop "
              "litter (the default rules); `false` turns them off"),
    OptionDoc("xattr", "true|false", "`false`",
              "`current/` keeps `user.*` extended attributes on this machine (Samba's DOS attributes, macOS "
              "streams, `cp -a`); off, none are kept (EOPNOTSUPP) and the kernel asks nothing per `write(2)` "
              "and per `ls -l` entry, which with them costs a round trip each"),
    OptionDoc("max_open_files", "N", "`-1`", "the daemon's `RLIMIT_NOFILE` (`-1` leaves it)"),
    OptionDoc("ro", "", "`false`",
              "read-only mount: the kernel refuses every write; GitFS still fetches and shows the remote's "
              "changes, and never commits or pushes (changes left in the clone wait for a read-write mount)"),
    OptionDoc("current_path", "NAME", "`current`",
              "name of the working tree folder; `/` puts the tree at the root"),
    OptionDoc("history_path", "NAME", "`history`", "name of the history folder"),
    OptionDoc("username", "USER", "the user in the URL", "HTTP(S) user", remote=True),
    OptionDoc("password_file", "FILE", "none", "file whose first line is the HTTP(S) password (or token)",
              remote=True),
    OptionDoc("password", "PASSWORD", "`$GITFS_PASSWORD`",
              "HTTP(S) password; shows in `ps`: prefer `password_file` or `GITFS_PASSWORD`", remote=True),
    OptionDoc("ssl_ca_file", "FILE", "none (system CAs)",
              "extra CA certificate(s), PEM, trusted for HTTPS (a private CA)", remote=True),
    OptionDoc("ssh_key", "FILE", "ssh-agent, then `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`", "SSH private key",
              alias="key", remote=True),
    OptionDoc("ssh_public_key", "FILE", "`KEY.pub` if present, else derived from the key", "SSH public key",
              remote=True),
    OptionDoc("ssh_key_passphrase_file", "FILE", "none", "file whose first line is the passphrase of `ssh_key`",
              remote=True),
    OptionDoc("ssh_key_passphrase", "PASSPHRASE", "`$GITFS_SSH_KEY_PASSPHRASE`",
              "passphrase of `ssh_key`; shows in `ps`", remote=True),
    OptionDoc("ssh_user", "NAME", "the user in the URL, else the current user",
              "SSH user (an error if the URL names another)", remote=True),
    OptionDoc("ssh_known_hosts", "FILE", "`~/.ssh/known_hosts`", "the trusted SSH host keys", remote=True),
    OptionDoc("ssh_strict_host_key_checking", "yes|no", "`yes`",
              "`no` accepts unknown and changed host keys (logged)", remote=True),
    OptionDoc("sentry_dsn", "DSN", "none", "accepted for compatibility with the original; ignored"),
)

MOUNT_WORDS_TEXT = ("Standard mount words (`rw`, `ro`, `nofail`, `_netdev`, `noauto`, `x-systemd.*`, ...) are "
                    "accepted so that fstab lines work; of them only `ro` changes anything (see above).")


def plain(text: str) -> str:
    """Text without the backticks of `code`."""
    return re.sub(r"`([^`]*)`", r"\1", text)


def usage(doc: OptionDoc) -> str:
    return f"{doc.name}={doc.value}" if doc.value else doc.name


def help_text() -> str:
    """What `gitfs --help` prints."""
    lines = [
        "usage: gitfs REMOTE_URL MOUNTPOINT [-o option[=value],...]",
        "       gitfs status MOUNTPOINT",
        "",
        "Mount a Git remote: MOUNTPOINT/current is the branch (read-write, every change",
        "becomes a commit that is pushed), MOUNTPOINT/history has one read-only folder",
        "per commit.",
        "",
        "  -o OPTIONS      comma-separated options, may repeat; a flag alone means true",
        "  -f              stay in the foreground (same as -o foreground)",
        "  -v, --version   print the version",
        "  -h, --help      print this help",
    ]
    for title, remote in (("options", False), ("remotes and credentials (see README)", True)):
        lines += ["", f"{title}:"]
        for doc in OPTIONS:
            if doc.remote == remote:
                lines += _help_entry(doc)
    lines += [""] + textwrap.wrap(plain(MOUNT_WORDS_TEXT), 80)
    return "\n".join(lines) + "\n"


def _help_entry(doc: OptionDoc) -> list[str]:
    text = plain(doc.text) + (f"; alias {doc.alias}" if doc.alias else "") + f" (default: {plain(doc.default)})"
    head = f"  {usage(doc)}"
    width, indent = 80, " " * 26
    if len(head) > 24:
        return [head] + textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)
    return textwrap.wrap(text, width, initial_indent=head.ljust(26), subsequent_indent=indent)


def readme_table() -> str:
    """The README's option table (markdown), between its `options-table` markers."""
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for doc in OPTIONS:
        name = f"`{doc.name}`" + (f" (alias `{doc.alias}`)" if doc.alias else "")
        rows.append(f"| {name} | {doc.default} | {doc.text.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"
