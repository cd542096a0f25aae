"""The git core's push (gitfs/repo/remote/transfer.py) against real servers on 127.0.0.1, without a
mount: what the server answers becomes the right error, and its words are cleaned.

- A per-reference answer of the server's own wording: `git daemon` runs receive-pack, whose
  proc-receive hook (receive.procReceiveRefs) answers `ng REF REASON` with any text.
- What a server that refuses every write denies: `ng` answers, git daemon without
  receive-pack, an sshd whose forced command says the credentials expired.
- A server that prints a line and drops the connection: a git:// server of a few lines
  here, which advertises the bare repository's refs, reads the push's commands, prints a
  banner on the progress channel and closes.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitfs.repo.errors import DENIED_CREDENTIALS, DENIED_RIGHTS, PushRefused
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.remote.transfer import AuthenticationError, Credentials, RemoteUnreachable
from gitfs.repo.repository import Repository
from helpers import clone_of, git
from servers import free_port, start_server, stop_group, wait_listening

# The server's per-reference answer: a colour, a bell, a window title set by an escape
# sequence, C1's CSI, a right-to-left override, a URL with a password and a token.
NASTY_REASON = ("\x1b[31mfrozen\x1b[0m by policy\x07\x1b]0;owned\x07\x9b2J \u202eesrever"
                " see https://bot:hunter2@forge.example/help?token=tok-42")
CLEAN_REASON = "frozen by policy esrever see https://forge.example/help?token=***"

PROC_RECEIVE = """#!{python}
# The proc-receive protocol (githooks(5)): versions, then the commands, then an answer per ref.
import sys

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer


def read():
    size = int(stdin.read(4), 16)
    return None if size == 0 else stdin.read(size - 4)


def write(data):
    stdout.write(b"%04x" % (len(data) + 4) + data)


while read() is not None:
    pass
write(b"version=1\\0")
stdout.write(b"0000")
stdout.flush()
refs = []
while (line := read()) is not None:
    refs.append(line.split()[2])
for ref in refs:
    write(b"ng " + ref + b" " + {reason!r} + b"\\n")
stdout.write(b"0000")
stdout.flush()
"""


def clone_with_a_commit(remote, path: Path, url: str) -> Repository:
    """A clone of the remote whose origin is `url`, one commit ahead."""
    clone_of(remote, path)
    git("remote", "set-url", "origin", url, cwd=path)
    (path / "notes.txt").write_text("to be pushed\n")
    git("add", "notes.txt", cwd=path)
    git("commit", "-q", "-m", "notes", cwd=path)
    return Repository(str(path), remote.branch)


def answer_every_ref(remote, reason: str) -> None:
    """The bare repository's receive-pack answers `ng REF reason` to every branch pushed."""
    git("--git-dir", str(remote.bare), "config", "receive.procReceiveRefs", "refs/heads/")
    hook = remote.bare / "hooks" / "proc-receive"
    hook.write_text(PROC_RECEIVE.format(python=sys.executable, reason=reason.encode()))
    hook.chmod(0o755)


def test_the_server_answer_for_a_reference_is_cleaned(remote, git_daemon, tmp_path):
    answer_every_ref(remote, NASTY_REASON)
    before = remote.head()
    repo = clone_with_a_commit(remote, tmp_path / "clone", git_daemon.url)
    with pytest.raises(PushRefused) as refused:
        remote_ops.push(repo, Credentials())
    assert refused.value.reason == CLEAN_REASON
    assert str(refused.value).endswith(f"refused by the server: {CLEAN_REASON}"), str(refused.value)
    assert remote.head() == before
    assert refused.value.denied == "" and not refused.value.writes_refused  # this push, not every write


# -- what a server that refuses every write denies: the credentials, or their rights ------------

def test_an_answer_that_blames_the_token_is_told_as_credentials_refused(remote, git_daemon, tmp_path):
    answer_every_ref(remote, "token expired: renew it under Settings, Access tokens")
    repo = clone_with_a_commit(remote, tmp_path / "clone", git_daemon.url)
    with pytest.raises(PushRefused) as refused:
        remote_ops.push(repo, Credentials())
    assert refused.value.denied == DENIED_CREDENTIALS and refused.value.writes_refused


def test_a_git_daemon_that_serves_no_push_denies_rights(remote, tmp_path):
    """git daemon without receive-pack says "access denied": git:// carries no credentials,
    so it is the rights (ask for write access, or mount read-only)."""
    port = free_port()
    daemon = start_server(["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={port}",
                           f"--base-path={remote.bare.parent}", remote.bare.parent],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(daemon, port, "git daemon")
        repo = clone_with_a_commit(remote, tmp_path / "clone", f"git://127.0.0.1:{port}/{remote.bare.name}")
        with pytest.raises(PushRefused) as refused:
            remote_ops.push(repo, Credentials())
    finally:
        stop_group(daemon)
    assert "access denied" in refused.value.reason
    assert refused.value.denied == DENIED_RIGHTS


def test_an_ssh_server_that_says_the_token_expired_refuses_the_credentials(remote, sshd, ssh_keys, tmp_path):
    """A forge's SSH server takes the key, then its command says the credentials expired and
    exits before git runs: an authentication failure, not the advice to ask for write access."""
    said = "ERROR: your token has expired, renew it under Settings"
    (sshd.directory / "authorized_keys").write_text(
        f'command="echo \'{said}\' >&2; exit 1" {ssh_keys.plain.public_line()}\n')
    repo = clone_with_a_commit(remote, tmp_path / "clone", sshd.url(remote.bare))
    credentials = Credentials(ssh_key=str(ssh_keys.plain.private), ssh_strict_host_key_checking=False)
    with pytest.raises(AuthenticationError) as failed:
        remote_ops.push(repo, credentials)
    assert "authentication refused" in str(failed.value) and said in str(failed.value), str(failed.value)


# -- a server that prints a banner and drops the connection ---------------------------------

def _packet(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


def _read_packet(stream) -> bytes | None:
    head = stream.read(4)
    if len(head) < 4 or head == b"0000":
        return None
    return stream.read(int(head, 16) - 4)


class BannerThenHangUp:
    """A git:// server on 127.0.0.1 for one push: it advertises the bare repository's refs,
    reads the commands, prints `banner` on the progress channel (as a hook would) and
    closes, without the report a push waits for; what the client sends meanwhile is read
    to its end, so the client sees the close, not a reset."""

    def __init__(self, bare: Path, banner: bytes):
        self.bare = bare
        self.banner = banner
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.served = 0
        self.thread = threading.Thread(target=self._serve, name="banner-server", daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"git://127.0.0.1:{self.port}/{self.bare.name}"

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            connection, _address = self.listener.accept()
            with connection:
                stream = connection.makefile("rb")
                _read_packet(stream)  # git-receive-pack /remote.git\0host=...\0
                refs = git("--git-dir", str(self.bare), "for-each-ref", "--format=%(objectname) %(refname)")
                lines = [line.encode() for line in refs.splitlines()]
                capabilities = b"\0report-status side-band-64k ofs-delta"
                connection.sendall(b"".join(_packet(line + (capabilities if at == 0 else b"") + b"\n")
                                            for at, line in enumerate(lines)) + b"0000")
                while _read_packet(stream) is not None:  # the commands
                    pass
                connection.sendall(_packet(b"\x02" + self.banner))
                connection.shutdown(socket.SHUT_WR)
                self.served += 1
                connection.settimeout(30)
                while connection.recv(1 << 16):  # the pack, until the client closes
                    pass

    def stop(self) -> None:
        """Stop listening (an accept() under way returns) and wait for the connection served
        to end; a second call finds nothing left to do."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(60)
        assert not self.thread.is_alive()


@pytest.fixture
def banner_server(remote):
    server = BannerThenHangUp(remote.bare, b"Welcome to the forge: maintenance at noon\n")
    try:
        yield server
    finally:
        server.stop()


def test_a_server_that_prints_then_hangs_up_is_unreachable_not_a_refusal(remote, banner_server, tmp_path):
    repo = clone_with_a_commit(remote, tmp_path / "clone", banner_server.url())
    with pytest.raises(RemoteUnreachable) as failed:
        remote_ops.push(repo, Credentials())
    assert not isinstance(failed.value, PushRefused)
    assert "cannot reach the server" in str(failed.value), str(failed.value)
    assert "Welcome to the forge: maintenance at noon" in str(failed.value)  # its words are kept
    banner_server.stop()
    assert banner_server.served == 1


def test_an_unpack_failure_is_a_refusal(remote, git_daemon, tmp_path):
    """The server's index-pack refuses the pack (receive.fsckObjects and a commit whose time
    zone is malformed): that is the server saying no, with its words, not a network failure."""
    git("--git-dir", str(remote.bare), "config", "receive.fsckObjects", "true")
    repo = clone_with_a_commit(remote, tmp_path / "clone", git_daemon.url)
    work = tmp_path / "clone"
    tree, parent = git("rev-parse", "HEAD^{tree}", "HEAD", cwd=work).split()
    text = (f"tree {tree}\nparent {parent}\nauthor A <a@example.com> 1700000000 +0000x\n"
            f"committer A <a@example.com> 1700000000 +0000\n\nmalformed\n")
    bad = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"], cwd=work,
                         input=text, capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", "refs/heads/main", bad, cwd=work)
    with pytest.raises(PushRefused) as refused:
        remote_ops.push(repo, Credentials())
    assert "unpacking the sent packfile failed" in refused.value.reason
    assert any("badTimezone" in line for line in refused.value.server_says), refused.value.server_says
    assert not refused.value.writes_refused
