"""The git core's push (gitfs/repo/remote.py) against real servers on 127.0.0.1, without a
mount: what the server answers becomes the right error, and its words are cleaned.

- A per-reference answer of the server's own wording: `git daemon` runs receive-pack, whose
  proc-receive hook (receive.procReceiveRefs) answers `ng REF REASON` with any text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitfs.repo import remote as remote_ops
from gitfs.repo.errors import PushRefused
from gitfs.repo.remote import Credentials
from gitfs.repo.repository import Repository
from helpers import clone_of, git

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


def test_the_server_answer_for_a_reference_is_cleaned(remote, git_daemon, tmp_path):
    git("--git-dir", str(remote.bare), "config", "receive.procReceiveRefs", "refs/heads/")
    hook = remote.bare / "hooks" / "proc-receive"
    hook.write_text(PROC_RECEIVE.format(python=sys.executable, reason=NASTY_REASON.encode()))
    hook.chmod(0o755)
    before = remote.head()
    repo = clone_with_a_commit(remote, tmp_path / "clone", git_daemon.url)
    with pytest.raises(PushRefused) as refused:
        remote_ops.push(repo, Credentials())
    assert refused.value.reason == CLEAN_REASON
    assert str(refused.value).endswith(f"refused by the server: {CLEAN_REASON}"), str(refused.value)
    assert remote.head() == before
