"""Layer 1: privacy.py and private_dirs.py without a mount: what a URL's credentials
become, folders made private whatever the umask, secret files checked as ssh checks keys."""

from __future__ import annotations

import os
import stat

import pytest

from gitfs import privacy
from gitfs.errors import FatalError
from gitfs.options import parse_options
from gitfs.repo.private_dirs import make_private_dirs, open_to_others


@pytest.mark.parametrize("url, stored, username, password", [
    ("https://alice:t%40ken@git.example.org/team/site.git", "https://git.example.org/team/site.git", "alice", "t@ken"),
    ("https://alice@git.example.org:8443/site.git", "https://git.example.org:8443/site.git", "alice", ""),
    ("git://user:pw@127.0.0.1:9418/remote.git", "git://127.0.0.1:9418/remote.git", "user", "pw"),
    ("ssh://git:pw@host:2222/srv/site.git", "ssh://git@host:2222/srv/site.git", "", "pw"),  # the user is the login
    ("git@host:site.git", "git@host:site.git", "", ""),
    ("/srv/site.git", "/srv/site.git", "", ""),
])
def test_the_urls_credentials_leave_the_url(url, stored, username, password):
    options = privacy.move_url_credentials(parse_options(url, "/mnt", []))
    assert (options.remote_url, options.username, options.password) == (stored, username, password)


def test_given_credentials_come_before_the_urls():
    options = privacy.move_url_credentials(parse_options("https://alice:old@h/r.git", "/mnt",
                                                         ["username=bob,password_file=/etc/pw"]))
    assert (options.remote_url, options.username, options.password) == ("https://h/r.git", "bob", "")


def test_a_password_handed_to_the_process_run_again_is_put_back_once(monkeypatch):
    monkeypatch.setenv(privacy.HANDED_PASSWORD_ENV, "p@ss:word")
    url = privacy.handed_password("https://alice@h/r.git")
    assert privacy.url_credentials(url) == ("alice", "p@ss:word")
    assert privacy.HANDED_PASSWORD_ENV not in os.environ
    assert privacy.handed_password("https://alice@h/r.git") == "https://alice@h/r.git"


def test_private_dirs_are_0700_whatever_the_umask(tmp_path):
    saved = os.umask(0)
    try:
        make_private_dirs(str(tmp_path / "a" / "b" / "c"))
    finally:
        os.umask(saved)
    for folder in ("a", "a/b", "a/b/c"):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o700
    tmp_path.chmod(0o755)
    assert not open_to_others(str(tmp_path / "a" / "b" / "c"))
    (tmp_path / "a").chmod(0o755)
    assert not open_to_others(str(tmp_path / "a" / "b"))  # b is still 0700
    (tmp_path / "a" / "b").chmod(0o711)
    assert open_to_others(str(tmp_path / "a" / "b")) == all(
        os.stat(parent).st_mode & 0o011 for parent in [*map(str, tmp_path.parents), str(tmp_path)])


@pytest.mark.parametrize("mode, refused", [(0o600, False), (0o400, False), (0o640, True), (0o604, True)])
def test_secret_files_readable_by_others_are_refused(tmp_path, mode, refused):
    secret = tmp_path / "key"
    secret.write_text("secret\n")
    secret.chmod(mode)
    if refused:
        with pytest.raises(FatalError, match=f"chmod 600 {secret}"):
            privacy.check_secret_file(str(secret), "ssh_key")
    else:
        privacy.check_secret_file(str(secret), "ssh_key")
