"""Layer 1: `-o` option parsing (gitfs/options.py) and the command line split (gitfs/cli.py).

Pure functions: nothing is mounted here. The same errors through the real
command line are in tests/mount/test_startup.py.
"""

import dataclasses
import getpass
import os

import pytest

from gitfs import __version__
from gitfs.cli import main, split_argv
from gitfs.errors import FatalError
from gitfs.options import Options, parse_options, split_option_string


def parse(*option_strings):
    return parse_options("/srv/remote.git", "/mnt/x", list(option_strings))


def test_defaults_are_the_originals():
    options = parse()
    assert options.branch is None  # the remote's default branch, not "master"
    assert options.repo_path is None
    assert options.sync_timeout == 5.0
    assert options.fetch_timeout == 30.0
    assert options.idle_fetch_timeout == 1800.0
    assert options.min_idle_times == 10.0
    assert options.max_size == 10.0
    assert options.cache_size == 800
    assert options.max_open_files == -1
    assert options.history_path == "history"
    assert options.current_path == "current"
    assert options.log == "syslog"
    assert options.log_level == "warning"
    assert options.foreground is False
    assert options.allow_other is False
    assert options.allow_root is False
    assert options.user == getpass.getuser()
    assert options.commiter_name == options.user
    assert options.commiter_email.startswith(options.user + "@")


def test_extended_attributes_only_when_asked():
    # Off by default: with them the kernel asks a round trip per `ls -l` entry and per write(2).
    assert parse().xattr is False
    assert parse("xattr").xattr is True
    assert parse("xattr=true").xattr is True
    assert parse("xattr,xattr=no").xattr is False


def test_every_documented_option_is_accepted():
    names = ["repo_path=/tmp/r", "branch=dev", "user=root", "group=root", "commiter_name=N",
             "commiter_email=n@example.com", "max_size=2", "fetch_timeout=3", "idle_fetch_timeout=4",
             "min_idle_times=5", "log=-", "log_level=info", "debug=false", "foreground=false",
             "allow_other=false", "allow_root=true", "cache_size=10", "ignore_file=/tmp/i",
             "hard_ignore=*.swp|*.tmp", "max_open_files=100", "history_path=h", "current_path=c",
             "username=u", "password=p", "ssh_key=/tmp/k", "ssh_user=git", "sync_timeout=1"]
    options = parse(",".join(names))
    assert (options.repo_path, options.branch, options.user, options.group) == ("/tmp/r", "dev", "root", "root")
    assert (options.commiter_name, options.commiter_email) == ("N", "n@example.com")
    assert (options.max_size, options.fetch_timeout, options.idle_fetch_timeout) == (2.0, 3.0, 4.0)
    assert (options.min_idle_times, options.sync_timeout, options.cache_size) == (5.0, 1.0, 10)
    assert (options.log, options.log_level, options.allow_root) == ("-", "info", True)
    assert (options.ignore_file, options.hard_ignore, options.max_open_files) == ("/tmp/i", "*.swp|*.tmp", 100)
    assert (options.history_path, options.current_path) == ("h", "c")
    assert (options.username, options.password, options.ssh_key, options.ssh_user) == ("u", "p", "/tmp/k", "git")


@pytest.mark.parametrize("name", ["foreground", "allow_other", "allow_root", "debug"])
def test_a_flag_without_value_means_true(name):
    assert getattr(parse(name), name) is True


@pytest.mark.parametrize("word, value", [
    ("true", True), ("false", False), ("yes", True), ("no", False), ("1", True), ("0", False),
    ("TRUE", True), ("No", False),
])
def test_boolean_words(word, value):
    assert parse(f"allow_other={word}").allow_other is value


def test_a_zero_really_disables():
    # The original's allow_other=0 enabled it.
    assert parse("allow_other=0").allow_other is False


def test_o_may_repeat_and_later_values_win():
    options = parse("branch=a,sync_timeout=2", "fetch_timeout=7", "branch=b")
    assert (options.branch, options.sync_timeout, options.fetch_timeout) == ("b", 2.0, 7.0)


@pytest.mark.parametrize("word", ["rw", "nofail", "_netdev", "noauto", "auto", "user", "users", "dev",
                                  "nodev", "suid", "nosuid", "exec", "noexec", "defaults",
                                  "x-systemd.automount", "x-systemd.requires=network-online.target"])
def test_mount_words_are_accepted(word):
    options = parse(word)
    assert options.read_only is False
    assert options.user == getpass.getuser()  # bare `user` is the mount word, not user=""


def test_all_mount_words_together_with_real_options():
    options = parse("rw,nofail,_netdev,noauto,user,dev,suid,x-systemd.automount,branch=dev")
    assert options.branch == "dev"


def test_ro_makes_a_read_only_mount():
    assert parse("ro").read_only is True
    assert parse("ro=yes").read_only is True
    assert parse("ro,rw").read_only is True  # fstab's `defaults` bring an rw that must not undo it
    assert parse("ro=false").read_only is False


def test_ro_with_a_bad_value_is_one_line_error():
    with pytest.raises(FatalError, match="option ro: expected true/false"):
        parse("ro=maybe")


def test_merge_timeout_is_an_alias_of_sync_timeout():
    assert parse("merge_timeout=12").sync_timeout == 12.0


def test_key_is_an_alias_of_ssh_key():
    assert parse("key=/tmp/id_test").ssh_key == "/tmp/id_test"


def test_debug_forces_debug_level():
    assert parse("debug,log_level=error").log_level == "debug"


def test_paths_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = parse_options("r.git", "mnt", ["repo_path=clone"])
    assert options.repo_path == str(tmp_path / "clone")
    assert options.mount_point == str(tmp_path / "mnt")


def test_current_path_slash_puts_the_tree_at_the_root():
    options = parse("current_path=/")
    assert options.current_path == ""
    assert options.history_path == "history"


def test_commas_can_be_escaped():
    assert split_option_string(r"hard_ignore=a\,b,branch=x") == ["hard_ignore=a,b", "branch=x"]


@pytest.mark.parametrize("text, words", [
    ("bogus=1", ["bogus"]),
    ("ignore=*.swp", ["ignore"]),
    ("sync_timeout=abc", ["sync_timeout", "abc"]),
    ("merge_timeout=abc", ["sync_timeout", "abc"]),
    ("cache_size=1.5", ["cache_size"]),
    ("max_open_files=many", ["max_open_files"]),
    ("allow_other=maybe", ["allow_other", "maybe"]),
    ("fetch_timeout=-1", ["fetch_timeout"]),
    ("sync_timeout=nan", ["sync_timeout"]),
    ("log_level=loud", ["log_level"]),
    ("branch", ["branch"]),
    ("repo_path", ["repo_path"]),
    ("history_path=a/b", ["history_path"]),
    ("current_path=history", ["current_path", "history_path"]),
    ("remote_url=x", ["remote_url"]),
])
def test_bad_options_are_errors_that_name_the_option(text, words):
    with pytest.raises(FatalError) as caught:
        parse(text)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_options_dataclass_has_every_option_of_the_reference():
    reference = {"repo_path", "branch", "user", "group", "commiter_name", "commiter_email", "max_size",
                 "fetch_timeout", "idle_fetch_timeout", "min_idle_times", "log", "log_level", "debug",
                 "foreground", "allow_other", "allow_root", "cache_size", "ignore_file", "hard_ignore",
                 "max_open_files", "history_path", "current_path", "username", "password", "ssh_key",
                 "ssh_user", "sync_timeout"}
    assert reference <= {field.name for field in dataclasses.fields(Options)}


def test_split_argv():
    positional, options, foreground = split_argv(["url", "-o", "a=1", "mnt", "-ob=2", "-f"])
    assert positional == ["url", "mnt"]
    assert options == ["a=1", "b=2"]
    assert foreground is True
    with pytest.raises(FatalError):
        split_argv(["url", "mnt", "-o"])
    with pytest.raises(FatalError, match="--bogus"):
        split_argv(["url", "mnt", "--bogus"])


def test_version_and_help(capsys):
    assert main(["-v"]) == 0
    assert capsys.readouterr().out == f"GitFS {__version__}\n"
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"GitFS {__version__}\n"
    assert main(["-h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gitfs REMOTE_URL MOUNTPOINT")
    for name in ("sync_timeout", "merge_timeout", "repo_path", "current_path", "history_path", "ssh_key"):
        assert name in out


def test_main_reports_bad_options_in_one_line_without_mounting(capsys, tmp_path):
    assert main([str(tmp_path / "r.git"), str(tmp_path), "-o", "bogus=1"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "bogus" in captured.err
    assert not os.path.ismount(tmp_path)


def test_options_are_frozen_after_parsing():
    options = parse_options("/srv/remote.git", "/mnt", ["branch=main"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.branch = "other"  # type: ignore[misc]
    assert options.branch == "main"
