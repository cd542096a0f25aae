"""When the server says no: a real server runs a pre-receive hook that refuses the push.

A push to a local path runs no hooks (libgit2 writes the ref itself), so the remote is
served: `git daemon --enable=receive-pack` (git://), sshd with git-receive-pack and
nginx + git http-backend. The hooks are shell scripts in the bare repository that
log every push they see, so attempts are counted by the server, not by GitFS.

What must hold: the server's own words reach the status file, `gitfs status`, the
metrics and the log (once); a refusal is not treated as a race (no re-merge loop,
retries back off); and removing what the server named lets everything else through,
as one commit that replaces the refused ones, so the refused content never reaches the
server.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from helpers import at, git, read_status, run_gitfs, wait_for
from servers import HTTP_PASSWORD, HTTP_USER

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")

FROZEN = "policy: the branch is frozen for the release, try again later"


def install_hook(remote, body: str) -> Path:
    """A pre-receive hook in the bare repository that logs each push to hook-attempts,
    then runs `body` (sh); returns the attempts log."""
    attempts = remote.root / "hook-attempts"
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ndate +%s.%N >> {attempts}\n{body}\n")
    hook.chmod(0o755)
    return attempts


def attempts_seen(attempts: Path) -> list[float]:
    return [float(line) for line in attempts.read_text().split()] if attempts.exists() else []


def frozen_hook(remote) -> Path:
    return install_hook(remote, f'echo "{FROZEN}" >&2\necho "second line on stdout"\nexit 1')


def refused(mount) -> dict:
    try:
        push = read_status(mount).get("last_push") or {}
    except (OSError, ValueError):
        return {}
    return push if push.get("result") == "refused" else {}


def local_tip(mount) -> str:
    return git("rev-parse", "main", cwd=mount.repo_path).strip()


def test_a_refusal_shows_the_server_words_once_and_is_not_merged_again(remote, git_daemon, mount_gitfs):
    attempts = frozen_hook(remote)
    before = remote.head()
    mount = mount_gitfs(at(git_daemon.url))
    (mount.current / "notes.txt").write_text("minutes of the meeting\n")
    wait_for(lambda: refused(mount), timeout=30, message="the refusal in the status")
    started = attempts_seen(attempts)[0]

    push = refused(mount)
    assert push["reason"] == "pre-receive hook declined"
    assert FROZEN in push["server_says"] and "second line on stdout" in push["server_says"]
    assert push["commit"] == local_tip(mount) and not push["writes_refused"]
    shown = run_gitfs("status", mount.path).stdout
    # The state line says so until the back-off's next attempt, one second on, begins.
    state = shown.splitlines()[0]
    assert "the server refused the push" in state or state.startswith("state:       pushing"), shown
    assert f"server says: {FROZEN}" in shown and "by the server: pre-receive hook declined" in shown
    metrics = (mount.path / ".gitfs" / "metrics").read_text()
    assert "gitfs_push_refusals_total 0" not in metrics and "gitfs_push_refusals_total" in metrics

    # Two more attempts, refused too; backing off, not hammering: after the first refusal
    # the worker waits at least 1 s, after the second at least 2 s (then 4, 8 ... s).
    wait_for(lambda: len(attempts_seen(attempts)) >= 3, timeout=30, message="two more attempts")
    seen = [when - started for when in attempts_seen(attempts)]
    gaps = [later - earlier for earlier, later in zip(seen, seen[1:])]
    assert all(gap >= 2 ** n for n, gap in enumerate(gaps)), f"attempts at {seen} s"
    text = mount.log_text()
    assert "merging again" not in text
    warnings = [line for line in text.splitlines() if FROZEN in line]
    assert len(warnings) == 1 and " WARNING " in warnings[0], warnings
    assert remote.head() == before

    (remote.bare / "hooks" / "pre-receive").unlink()  # the release is out: the branch thaws
    # The next attempt of the back-off (1, 2, 4, 8, 16, 32 s ...) pushes, untouched.
    wait_for(lambda: "notes.txt" in remote.files(), timeout=60, message="the push after the thaw")
    assert remote.show("notes.txt") == b"minutes of the meeting\n"
    wait_for(lambda: (read_status(mount).get("last_push") or {}).get("result") == "ok", timeout=10,
             message="the status after the thaw")
    assert "the server refused" not in run_gitfs("status", mount.path).stdout
    assert "push works again" in mount.log_text()


def test_a_hook_that_refuses_three_times_then_accepts_loses_nothing(remote, git_daemon, mount_gitfs):
    count = remote.root / "count"
    attempts = install_hook(remote, f'echo x >> {count}\nif [ $(wc -l < {count}) -le 3 ]; then\n'
                                    f'  echo "quota: try again in a moment" >&2\n  exit 1\nfi')
    mount = mount_gitfs(at(git_daemon.url))
    (mount.current / "first.txt").write_text("1\n")
    wait_for(lambda: refused(mount), timeout=30, message="the first refusal")
    (mount.current / "second.txt").write_text("2\n")
    wait_for(lambda: len(attempts_seen(attempts)) >= 3, timeout=60, message="three refusals")
    (mount.current / "third.txt").write_text("3\n")
    mount.process.send_signal(signal.SIGUSR1)  # and now, not after the back-off
    wait_for(lambda: {"first.txt", "second.txt", "third.txt"} <= set(remote.files()), timeout=90,
             message="every file once the server accepts")
    assert [remote.show(name) for name in ("first.txt", "second.txt", "third.txt")] == [b"1\n", b"2\n", b"3\n"]
    seen = attempts_seen(attempts)
    assert 4 <= len(seen) <= 10, seen
    wait_for(lambda: local_tip(mount) == remote.head(), timeout=30, message="the clone at the remote's tip")
    assert "merging again" not in mount.log_text()


SIZE_LIMIT_HOOK = r"""
zero=0000000000000000000000000000000000000000
while read old new ref; do
  range="$new"; [ "$old" = "$zero" ] || range="$old..$new"
  git rev-list --objects $range | git cat-file --batch-check='%(objecttype) %(objectsize) %(rest)' |
  while read kind size name; do
    if [ "$kind" = blob ] && [ "$size" -gt 1048576 ]; then
      echo "error: $name is $size bytes; files over 1 MiB are refused (use Git LFS)" >&2
      echo refused > "$GIT_DIR/refused"
    fi
  done
done
if [ -e "$GIT_DIR/refused" ]; then rm -f "$GIT_DIR/refused"; exit 1; fi
"""


def test_removing_the_file_the_server_named_lets_the_rest_through(remote, git_daemon, mount_gitfs):
    install_hook(remote, SIZE_LIMIT_HOOK)
    mount = mount_gitfs(at(git_daemon.url))
    (mount.current / "notes.txt").write_text("notes\n")
    (mount.current / "scan.bin").write_bytes(os.urandom(3 << 20))
    wait_for(lambda: refused(mount), timeout=30, message="the size limit's refusal")
    assert any("scan.bin" in line and "over 1 MiB" in line for line in refused(mount)["server_says"])
    assert "server says: error: scan.bin is" in run_gitfs("status", mount.path).stdout

    remote.commit({"colleague.txt": "pushed meanwhile\n"}, "a colleague's change")  # over the path: no hook
    wait_for(lambda: (mount.current / "colleague.txt").exists(), timeout=30, message="the colleague's change")
    (mount.current / "scan.bin").unlink()  # the user mends it from the folder
    (mount.current / "after.txt").write_text("written after the refusal\n")
    wait_for(lambda: {"notes.txt", "after.txt"} <= set(remote.files()), timeout=60,
             message="the other files on the remote")
    assert "scan.bin" not in remote.files()
    objects = git("--git-dir", str(remote.bare), "rev-list", "--objects", "--all")
    assert "scan.bin" not in objects  # the refused content never reached the server
    message = git("--git-dir", str(remote.bare), "log", "-1", "--format=%B", "main")
    assert message.startswith("Update 2 items. Added 2 items."), message
    assert "commits not pushed since the server refused a push (pre-receive hook declined)" in message
    wait_for(lambda: local_tip(mount) == remote.head(), timeout=30, message="the branch on the replacement")
    assert sorted(os.listdir(mount.current)) == ["after.txt", "colleague.txt", "me", "notes.txt", "testing"]
    assert remote.show("colleague.txt") == b"pushed meanwhile\n"
    assert git("for-each-ref", "refs/gitfs/", cwd=mount.repo_path).strip() == ""
    wait_for(lambda: (read_status(mount).get("last_push") or {}).get("result") == "ok", timeout=10,
             message="the status after the mend")
    # History stays linear, and what the colleague pushed meanwhile is there too.
    parents = git("--git-dir", str(remote.bare), "log", "--format=%p", "main").split("\n")
    assert all(len(line.split()) <= 1 for line in parents)


@pytest.mark.parametrize("transport", ["ssh", "http"])
def test_the_server_words_over_ssh_and_http(transport, remote, request, mount_gitfs, tmp_path):
    attempts = frozen_hook(remote)
    if transport == "ssh":
        sshd, keys = request.getfixturevalue("sshd"), request.getfixturevalue("ssh_keys")
        mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=keys.plain.private)
    else:
        http_server = request.getfixturevalue("http_server")
        password_file = tmp_path / "password"
        password_file.write_text(HTTP_PASSWORD + "\n")
        password_file.chmod(0o600)
        mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER,
                            password_file=password_file)
    (mount.current / "notes.txt").write_text("notes\n")
    wait_for(lambda: refused(mount), timeout=30, message="the refusal in the status")
    push = refused(mount)
    assert FROZEN in push["server_says"], push
    assert attempts_seen(attempts)
    assert HTTP_PASSWORD not in subprocess.run(["cat", str(mount.path / ".gitfs" / "status")],
                                               capture_output=True, text=True).stdout


# -- gitolite: a real SSH gatekeeper ----------------------------------------------------

def test_gitolite_tells_a_reader_that_the_server_refuses_writes(gitolite, mount_gitfs):
    mount = mount_gitfs(at(gitolite.url("team")), ssh_key=gitolite.users["reader"].private)
    assert (mount.current / "README").read_text() == "The team's repository.\n"
    (mount.current / "notes.txt").write_text("from the reader\n")
    wait_for(lambda: refused(mount), timeout=30, message="gitolite's refusal in the status")
    push = refused(mount)
    assert push["writes_refused"] and "FATAL: W any team reader DENIED" in push["reason"], push
    assert push["denied"] == "rights", push  # the key was taken: it may only read
    shown = run_gitfs("status", mount.path).stdout
    assert "the server refuses writes from this mount" in shown and "-o ro" in shown, shown
    assert "credentials" not in shown, shown
    assert git("--git-dir", str(gitolite.repository("team")), "rev-parse", "main").strip() == gitolite.seeded["team"]


def test_gitolite_refuses_a_protected_branch_in_its_own_words(gitolite, mount_gitfs):
    mount = mount_gitfs(at(gitolite.url("team")), ssh_key=gitolite.users["guest"].private)
    (mount.current / "notes.txt").write_text("from the guest\n")
    wait_for(lambda: refused(mount), timeout=30, message="gitolite's refusal in the status")
    push = refused(mount)
    assert "FATAL: W refs/heads/main team guest DENIED by fallthru" in push["server_says"], push
    assert not push["writes_refused"]
    shown = run_gitfs("status", mount.path).stdout
    assert "server says: FATAL: W refs/heads/main team guest DENIED by fallthru" in shown, shown
    assert git("--git-dir", str(gitolite.repository("team")), "rev-parse", "main").strip() == gitolite.seeded["team"]


def test_an_http_server_that_forbids_pushes_refuses_writes(remote, http_server, mount_gitfs, tmp_path):
    git("--git-dir", str(remote.bare), "config", "http.receivepack", "false")  # git http-backend: 403
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD + "\n")
    password_file.chmod(0o600)
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password_file=password_file)
    (mount.current / "notes.txt").write_text("notes\n")
    wait_for(lambda: refused(mount), timeout=30, message="the refusal in the status")
    push = refused(mount)
    assert push["writes_refused"] and "403" in push["reason"], push
    # A 403 alone does not tell an expired or revoked token from a reader: both are said.
    assert push["denied"] == "credentials or rights", push
    shown = run_gitfs("status", mount.path).stdout
    assert "the server refuses writes from this mount" in shown, shown
    [advice] = [line for line in shown.splitlines() if line.startswith("what to do:")]
    assert "credentials" in advice and "expired" in advice and "write access" in advice and "-o ro" in advice
    assert "refused the password" not in mount.log_text()  # the password was taken: the fetch works
