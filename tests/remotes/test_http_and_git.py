"""Remotes over smart HTTP(S) (nginx + fcgiwrap + git http-backend, basic auth) and git:// (git daemon).

Passwords come from password_file, $GITFS_PASSWORD or password=; HTTPS trusts a
test CA through ssl_ca_file. A secret never reaches the log, the status file, the
commit messages or (from a file or the environment) the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from helpers import (
    assert_one_line_error,
    at,
    fetches,
    git,
    remote_failing,
    run_gitfs,
    start_gitfs,
    wait_for,
    write_and_wait_pushed,
)
from servers import HTTP_PASSWORD, HTTP_USER

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")


def assert_secret_nowhere(mount, remote, secret: str, *shown: str) -> None:
    """Not in the daemon's command line, log, status file, metrics or `gitfs status`, nor
    in any file of the clone (.git/config, FETCH_HEAD, reflogs...), nor in what was shown."""
    assert secret not in open(f"/proc/{mount.process.pid}/cmdline").read()
    assert secret not in mount.log_text()
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        status = json.load(handle)
    assert secret not in json.dumps(status) and status["remote"].startswith(("http://", "https://"))
    assert secret not in (mount.path / ".gitfs" / "metrics").read_text()
    assert secret not in run_gitfs("status", mount.path).stdout
    assert not any(secret in line for line in remote.log("%an %ae %s %b"))
    holding = [str(path) for path in mount.repo_path.rglob("*")
               if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes()]
    assert holding == [], "the secret is written in the clone"
    assert not any(secret in text for text in shown)


def test_http_password_file_push_and_fetch(remote, http_server, mount_gitfs, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD + "\n")
    password_file.chmod(0o600)
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password_file=password_file)
    write_and_wait_pushed(mount, remote, text="over http\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over http")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD)


def test_https_password_from_environment_and_private_ca(remote, http_server, test_ca, mount_gitfs, monkeypatch):
    monkeypatch.setenv("GITFS_PASSWORD", HTTP_PASSWORD)
    mount = mount_gitfs(at(http_server.https_url("remote.git")), username=HTTP_USER, ssl_ca_file=test_ca.cert)
    write_and_wait_pushed(mount, remote, text="over https\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over https")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD)


def test_password_option_and_credentials_in_the_url_stay_out_of_logs_and_status(remote, http_server,
                                                                                mount_gitfs):
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password=HTTP_PASSWORD)
    write_and_wait_pushed(mount, remote, "a.txt")
    assert HTTP_PASSWORD not in mount.log_text()
    mount.stop()
    url = http_server.http_url("remote.git").replace("://", f"://{HTTP_USER}:{HTTP_PASSWORD}@")
    mount = mount_gitfs(at(url))
    write_and_wait_pushed(mount, remote, "b.txt")
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        assert json.load(handle)["remote"] == http_server.http_url("remote.git")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD)
    assert git("config", "remote.origin.url", cwd=mount.repo_path).strip() == http_server.http_url("remote.git")


def test_a_token_in_the_url_query_is_shown_nowhere(remote, http_server, mount_gitfs, tmp_path):
    """A forge's token in the query (`?private_token=...`): the URL works, and everything
    that shows the remote (status file, `gitfs status`, the log, the mount table) shows
    the parameter's name without its value."""
    token = "glpat-T0ken-in-the-query"
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD + "\n")
    password_file.chmod(0o600)
    url = http_server.http_url("remote.git") + f"?private_token={token}"
    mount = mount_gitfs(at(url), username=HTTP_USER, password_file=password_file)
    write_and_wait_pushed(mount, remote, text="over http, with a token in the query\n")
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        status = json.load(handle)
    assert status["remote"] == http_server.http_url("remote.git") + "?private_token=***", status["remote"]
    shown = run_gitfs("status", mount.path).stdout
    assert "private_token=***" in shown and token not in shown, shown
    assert token not in mount.log_text()
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        assert not any(token in line for line in mounts if str(mount.path) in line)


def test_https_url_with_a_password_is_used_and_never_written(remote, http_server, test_ca, mount_gitfs, tmp_path,
                                                              monkeypatch):
    monkeypatch.delenv("GITFS_PASSWORD", raising=False)
    url = http_server.https_url("remote.git").replace("://", f"://{HTTP_USER}:{HTTP_PASSWORD}@")
    # The first mount clones, as a daemon: the command returns once the mount answers.
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    started = run_gitfs(url, mount_point, "-o", f"repo_path={tmp_path / 'clone'},ssl_ca_file={test_ca.cert},"
                        f"log={tmp_path / 'daemon.log'}")
    assert started.returncode == 0, started.stderr
    try:
        daemon = [pid for pid in os.listdir("/proc") if pid.isdigit() and str(mount_point) in _cmdline(pid)]
        assert daemon, "the daemon runs"
        assert not any(HTTP_PASSWORD in _cmdline(pid) for pid in daemon), "the password is in ps"
    finally:
        subprocess.run(["fusermount3", "-u", str(mount_point)], check=False)
        wait_for(lambda: not any(str(mount_point) in _cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit()),
                 timeout=60, message="the daemon to stop")
    assert HTTP_PASSWORD not in started.stdout + started.stderr
    assert HTTP_PASSWORD not in (tmp_path / "daemon.log").read_text()
    # A wrong password in the URL: one line, without it.
    wrong = url.replace(HTTP_PASSWORD, "Wr0ngSecret")
    (tmp_path / "wrong-password").mkdir()
    refused = start_gitfs(wrong, tmp_path / "wrong-password", f"ssl_ca_file={test_ca.cert}")
    line = assert_one_line_error(refused, "refused", HTTP_USER)
    assert "Wr0ngSecret" not in line
    # The next mount of the same clone, in the foreground: nothing written, nothing shown.
    mount = mount_gitfs(at(url), repo_path=tmp_path / "clone", ssl_ca_file=test_ca.cert)
    write_and_wait_pushed(mount, remote, "c.txt")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD, started.stdout, started.stderr)


def test_a_clone_whose_config_holds_the_password_is_cleaned_at_mount(remote, http_server, mount_gitfs, tmp_path):
    url = http_server.http_url("remote.git").replace("://", f"://{HTTP_USER}:{HTTP_PASSWORD}@")
    git("clone", "-q", url, str(tmp_path / "old-clone"))
    assert HTTP_PASSWORD in git("config", "remote.origin.url", cwd=tmp_path / "old-clone").strip()
    (tmp_path / "old-clone").chmod(0o700)
    mount = mount_gitfs(at(url), repo_path=tmp_path / "old-clone")
    assert git("config", "remote.origin.url", cwd=mount.repo_path).strip() == http_server.http_url("remote.git")
    assert "credentials in the remote URL" in mount.log_text()
    write_and_wait_pushed(mount, remote, "d.txt")


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_wrong_password_is_one_line_not_a_loop(remote, http_server, tmp_path):
    started = time.monotonic()
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         "password=wrong-one")
    line = assert_one_line_error(result, "refused", HTTP_USER)
    assert "wrong-one" not in line and time.monotonic() - started < 20


def test_no_credentials_given_is_one_line(remote, http_server, tmp_path, monkeypatch):
    monkeypatch.delenv("GITFS_PASSWORD", raising=False)
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path)
    assert_one_line_error(result, "asks for a username and password", "password_file")


def test_missing_password_file_is_one_line(remote, http_server, tmp_path):
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"password_file={tmp_path / 'nope'}")
    assert_one_line_error(result, "password_file", "nope")


def test_https_certificate_is_verified(remote, http_server, test_ca, tmp_path):
    result = start_gitfs(http_server.https_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "certificate", "not trusted", "ssl_ca_file")
    result = start_gitfs(http_server.https_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}", f"ssl_ca_file={test_ca.stranger_cert}")
    assert_one_line_error(result, "certificate", "not trusted")


def test_repository_not_found_and_server_down_over_http(remote, http_server, tmp_path):
    result = start_gitfs(http_server.http_url("nope.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "repository not found")
    http_server.stop()
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "cannot reach")


def test_password_changed_while_mounted(remote, http_server, mount_gitfs, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD)
    password_file.chmod(0o600)
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password_file=password_file,
                        expect_errors=True)
    write_and_wait_pushed(mount, remote, "before.txt")
    http_server.set_password("changed-on-the-server")
    (mount.current / "during.txt").write_text("kept locally\n")
    wait_for(lambda: remote_failing(mount, "refused the password"), timeout=20,
             message="the refusal in the status file")
    failed = fetches(mount, "failed")
    wait_for(lambda: fetches(mount, "failed") >= failed + 3, timeout=20, message="three more attempts refused")
    assert "during.txt" not in remote.files()
    assert (mount.current / "during.txt").read_text() == "kept locally\n"
    refusals = [line for line in mount.log_text().splitlines() if "refused the password" in line]
    assert 1 <= len(refusals) <= 2, refusals  # once per worker and change of state
    http_server.set_password(HTTP_PASSWORD)
    wait_for(lambda: "during.txt" in remote.files(), timeout=60, message="the push once the password is back")


def test_git_daemon(remote, git_daemon, mount_gitfs, tmp_path):
    mount = mount_gitfs(at(git_daemon.url))
    write_and_wait_pushed(mount, remote, text="over git://\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over git://")
    result = start_gitfs(git_daemon.url.replace("remote.git", "nope.git"), tmp_path)
    assert_one_line_error(result, "repository not found")
