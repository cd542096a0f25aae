"""Remote credentials without servers: URL parsing, known_hosts lookup, key files, options."""

from __future__ import annotations

import subprocess

import pytest

from gitfs.errors import FatalError
from gitfs.options import HELP, parse_options
from gitfs.repo.credentials import Credentials, check, host_and_port, host_is_known, key_is_encrypted, transport_of
from gitfs.repo.errors import SettingError
from gitfs.repo.remote.server_text import SERVER_WORDS_LENGTH, redact_url, server_words
from gitfs.repo.remote.transfer import SERVER_LINES_SHOWN, server_lines


@pytest.mark.parametrize("url, transport, where", [
    ("ssh://git@example.com:2222/srv/r.git", "ssh", ("example.com", 2222, "git")),
    ("ssh://example.com/srv/r.git", "ssh", ("example.com", 22, "")),
    ("git@example.com:team/r.git", "ssh", ("example.com", 22, "git")),
    ("example.com:r.git", "ssh", ("example.com", 22, "")),
    ("https://u:p@example.com/r.git", "https", ("example.com", 443, "u")),
    ("http://example.com:8080/r.git", "http", ("example.com", 8080, "")),
    ("git://example.com/r.git", "git", ("example.com", 9418, "")),
])
def test_transport_and_host(url, transport, where):
    assert transport_of(url) == transport
    assert host_and_port(url) == where


def test_local_paths_are_not_ssh():
    assert transport_of("/srv/r.git") == "local"
    assert transport_of("relative/dir:with-colon") == "local"


def test_redact_url():
    assert redact_url("https://alice:secret@example.com/r.git") == "https://example.com/r.git"
    assert "secret" not in redact_url("failed: https://alice:secret@h/r.git said no")


@pytest.mark.parametrize("url, shown", [
    # A raw "@" in the password: the user information runs to the last "@" before the host.
    ("https://alice:p@ss@w0rd@example.com/r.git", "https://example.com/r.git"),
    ("https://alice:p@ss@example.com", "https://example.com"),
    # A raw "/" in the password: past it, to the "@" before the host.
    ("https://alice:pa/ss@example.com/r.git", "https://example.com/r.git"),
    ("ssh://git@example.com/~alice/r@2.git", "ssh://example.com/~alice/r@2.git"),  # an "@" in the path stays
    # Tokens in the query (and fragment): the names stay, the values go.
    ("https://gitlab.example/r.git?private_token=glpat-Xy7", "https://gitlab.example/r.git?private_token=***"),
    ("https://h/r.git?access_token=a1&token=t2;x=3#sig=s4", "https://h/r.git?access_token=***&token=***;x=***#sig=***"),
    ("https://u:p@h/r.git?token=t2", "https://h/r.git?token=***"),
    ("http://[::1]:8080/r.git?token=", "http://[::1]:8080/r.git?token="),
    ("https://h:8443/r.git", "https://h:8443/r.git"),
    ("git@example.com:team/r.git", "git@example.com:team/r.git"),
    ("/srv/git/r.git", "/srv/git/r.git"),
])
def test_redact_url_removes_every_credential(url, shown):
    assert redact_url(url) == shown


def test_redact_url_in_a_line_of_text():
    line = ("failed: 'https://alice:p@ss@h/r.git?private_token=tok-1' (see https://h/help?token=tok-2).")
    assert redact_url(line) == "failed: 'https://h/r.git?private_token=***' (see https://h/help?token=***)."


def test_known_hosts_plain_hashed_and_ports(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("# comment\n\n"
                     "plain.example,10.0.0.1 ssh-ed25519 AAAA\n"
                     "[ported.example]:2222 ssh-ed25519 AAAA\n"
                     "hashed.example ssh-ed25519 AAAA\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True, capture_output=True)
    text = known.read_text()
    assert "hashed.example" not in text and "plain.example" not in text
    assert host_is_known(str(known), "plain.example", 22)
    assert host_is_known(str(known), "10.0.0.1", 22)
    assert host_is_known(str(known), "hashed.example", 22)
    assert host_is_known(str(known), "ported.example", 2222)
    assert not host_is_known(str(known), "ported.example", 22)
    assert not host_is_known(str(known), "plain.example", 2222)
    assert not host_is_known(str(known), "other.example", 22)
    assert not host_is_known(str(tmp_path / "missing"), "plain.example", 22)


def test_key_is_encrypted(tmp_path):
    for name, phrase in (("clear", ""), ("locked", "pass phrase")):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", phrase, "-f", str(tmp_path / name)], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-m", "PEM", "-N", "pem-phrase", "-f", str(tmp_path / "pem")],
                   check=True)
    assert not key_is_encrypted(str(tmp_path / "clear"))
    assert key_is_encrypted(str(tmp_path / "locked"))
    assert key_is_encrypted(str(tmp_path / "pem"))
    assert not key_is_encrypted(str(tmp_path / "missing"))


def test_check_names_the_problem(tmp_path):
    with pytest.raises(SettingError, match="ssh_key .* does not exist"):
        check(Credentials(ssh_key=str(tmp_path / "nope")), "ssh://h/r")
    with pytest.raises(SettingError, match="ssl_ca_file"):
        check(Credentials(ssl_ca_file=str(tmp_path / "nope")), "https://h/r")
    with pytest.raises(SettingError, match="ssh_known_hosts"):
        check(Credentials(ssh_known_hosts=str(tmp_path / "nope")), "ssh://h/r")
    with pytest.raises(SettingError, match="differs"):
        check(Credentials(ssh_user="a"), "ssh://b@h/r")
    check(Credentials(ssh_user="a"), "ssh://a@h/r")


def test_secrets_stay_out_of_repr():
    text = repr(Credentials(username="alice", password="pw-123", ssh_key_passphrase="phrase-456"))
    assert "alice" in text and "pw-123" not in text and "phrase-456" not in text


def test_new_options_parse_and_are_documented():
    options = parse_options("ssh://h/r", "/mnt", [
        "key=/k,ssh_user=git,ssh_public_key=/k.pub,ssh_key_passphrase_file=/p,ssh_known_hosts=/kh,"
        "ssh_strict_host_key_checking=no,password_file=/pw,username=u,ssl_ca_file=/ca.pem"])
    assert (options.ssh_key, options.ssh_user, options.ssh_public_key) == ("/k", "git", "/k.pub")
    assert (options.ssh_key_passphrase_file, options.ssh_known_hosts) == ("/p", "/kh")
    assert options.ssh_strict_host_key_checking is False
    assert (options.password_file, options.username, options.ssl_ca_file) == ("/pw", "u", "/ca.pem")
    assert parse_options("ssh://h/r", "/mnt", []).ssh_strict_host_key_checking is True
    for name in ("password_file", "ssh_key_passphrase_file", "ssh_known_hosts", "ssh_strict_host_key_checking",
                 "ssl_ca_file", "ssh_public_key", "GITFS_PASSWORD"):
        assert name in HELP


@pytest.mark.parametrize("both", ["password=a,password_file=/f", "ssh_key_passphrase=a,ssh_key_passphrase_file=/f"])
def test_a_secret_and_its_file_together_is_an_error(both):
    with pytest.raises(FatalError, match="give only one"):
        parse_options("https://h/r", "/mnt", [both])


def test_options_of_another_transport_are_not_checked(tmp_path):
    missing = str(tmp_path / "nope")
    check(Credentials(ssh_key=missing, ssh_known_hosts=missing, ssl_ca_file=missing), "/srv/local.git")
    check(Credentials(ssl_ca_file=missing), "ssh://h/r")
    check(Credentials(ssh_key=missing), "https://h/r")


def test_server_lines_keep_the_words_and_drop_progress_colours_and_credentials():
    said = ("Resolving deltas:  50% (1/2)\rResolving deltas: 100% (2/2), done.\n"
            "\x1b[1;31mGH013: Repository rule violations found\x1b[0m\r\n"
            "\n   - Push cannot contain secrets   \n"
            "see https://alice:s3cret@forge.example/rules\n")
    assert server_lines(said) == ("GH013: Repository rule violations found", "- Push cannot contain secrets",
                                  "see https://forge.example/rules")
    many = server_lines("".join(f"line {number}\n" for number in range(40)))
    assert len(many) == SERVER_LINES_SHOWN and many[-1] == f"... and {40 - SERVER_LINES_SHOWN + 1} more lines"
    assert len(server_lines("x" * 5000)[0]) == 300


@pytest.mark.parametrize("said, shown", [
    ("\x1b]0;owned\x07policy: frozen", "policy: frozen"),  # a window title (OSC, ended by BEL)
    ("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ here", "link here"),  # a hyperlink (OSC, ST)
    ("\x9b2Jcleared \x9b31mred", "cleared red"),  # C1's one-character CSI
    ("\x1b[2K\x1b[1Gline \x1bcreset", "line reset"),  # erase, move, reset the terminal
    ("\u202eesrever\u202c and \u2066isolated\u2069", "esrever and isolated"),  # bidirectional overrides
    ("tab\tand\x0bvertical\x00nul \x7f", "tab andverticalnul"),
])
def test_server_words_remove_what_a_terminal_would_act_on(said, shown):
    assert server_words(said) == shown
    assert server_lines(said) == (shown,)


def test_server_words_are_one_bounded_line_without_credentials():
    assert server_words("two\nlines  and   spaces\r\n") == "two lines and spaces"
    assert server_words("see https://u:pw@h/x?token=t") == "see https://h/x?token=***"
    assert len(server_words("y" * 5000)) == SERVER_WORDS_LENGTH
