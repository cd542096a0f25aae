"""Fixtures for real Git servers on the loopback interface, each started and stopped by
its fixture (the servers themselves are in servers.py).

- `sshd`: OpenSSH's sshd; the remote is the bare repository of the `remote` fixture,
  reached over ssh://.
- `git_daemon`: `git daemon` serving the `remote` fixture's directory (git://).
- `http_server`: nginx + fcgiwrap + `git http-backend`, basic auth, HTTP and HTTPS.
- `gitolite`: gitolite behind its own sshd, users with different rights on repo `team`.

Nothing outside tmp is read or written except the binaries themselves (and
/run/sshd, the empty directory sshd insists on, created if missing as the
package would). A fixture skips with the reason when its server is not installed.
Each server is stopped, with every process it started, in a `finally`: also when
the test fails or the server fails to start.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import LFS_FILES, LfsRemote, require_git_lfs, wait_for
from servers import (
    GIT_HTTP_BACKEND,
    HTTP_PASSWORD,
    HTTP_USER,
    NGINX_STREAM_MODULE,
    GiftlessServer,
    GitDaemon,
    GitoliteServer,
    HttpServer,
    KeyPair,
    need,
    run,
    sshd_server,
    start_server,
    stop_group,
)

# -- SSH ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory):
    """Client key pairs: `plain`, `protected` (passphrase), `other` (not authorized by `sshd`;
    gitolite's guest), `rsa`."""
    need("ssh-keygen")
    directory = tmp_path_factory.mktemp("ssh-keys")

    class Keys:
        plain = KeyPair(directory, "plain")
        protected = KeyPair(directory, "protected", passphrase="open sesame")
        other = KeyPair(directory, "other")
        rsa = KeyPair(directory, "rsa", kind="rsa")
    return Keys


def trust_host(known_hosts_line: str) -> None:
    """Add a server's host key to ~/.ssh/known_hosts (HOME is the test's own)."""
    ssh_dir = Path(os.environ["HOME"]) / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    with open(ssh_dir / "known_hosts", "a") as known:
        known.write(known_hosts_line)


@pytest.fixture
def sshd(tmp_path_factory, ssh_keys):
    """A running sshd whose host key is in ~/.ssh/known_hosts (HOME is the test's own)."""
    server = sshd_server(tmp_path_factory.mktemp("sshd"), ssh_keys)
    trust_host(server.known_hosts_line())
    try:
        server.start()
        yield server
    finally:
        server.stop()


GITOLITE_RULES = """\
repo team
    RW+                     =   writer
    R                       =   reader
    RW  refs/heads/drafts/  =   guest
    R                       =   guest
"""


@pytest.fixture
def gitolite(tmp_path_factory, ssh_keys):
    """A running gitolite (GitoliteServer) with repo `team`: one commit on main with a README
    (`.seeded["team"]`: its sha). Users: `writer` (ssh_keys.plain) RW+, `reader` (a key of its own:
    Debian 12's libssh2 signs RSA keys with SHA-1, which OpenSSH refuses) read only,
    `guest` (ssh_keys.other, let in here though not by `sshd`) reads all and may push only
    under refs/heads/drafts/: main is refused to it by gitolite's update hook, whereas the
    reader is refused by gitolite-shell before git runs. The host key is in ~/.ssh/known_hosts
    (HOME is the test's own); `.url("team")` is the remote."""
    directory = tmp_path_factory.mktemp("gitolite")
    reader = KeyPair(directory, "reader")
    server = GitoliteServer(directory, {"writer": ssh_keys.plain, "reader": reader, "guest": ssh_keys.other})
    server.set_rules(GITOLITE_RULES)
    trust_host(server.known_hosts_line())
    try:
        server.start()
        server.seed("team", "writer", {"README": "The team's repository.\n"}, "README")
        yield server
    finally:
        server.stop()


@pytest.fixture
def ssh_agent(tmp_path_factory, monkeypatch):
    """An ssh-agent of the test's own (SSH_AUTH_SOCK set); add keys with .add(keypair)."""
    need("ssh-agent", "ssh-add")
    socket_path = tmp_path_factory.mktemp("agent") / "agent.sock"
    process = start_server(["ssh-agent", "-D", "-a", socket_path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    class Agent:
        path = socket_path

        @staticmethod
        def add(key: KeyPair) -> None:
            env = dict(os.environ, SSH_AUTH_SOCK=str(socket_path), SSH_ASKPASS_REQUIRE="never", DISPLAY="")
            run("ssh-add", "-q", key.private, env=env, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: socket_path.exists(), timeout=10, message="ssh-agent")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        yield Agent
    finally:
        stop_group(process)


# -- git daemon ---------------------------------------------------------------------------

@pytest.fixture
def git_daemon(remote):
    """`git daemon` exporting the `remote` fixture's directory, push enabled; `.url` is the remote's."""
    need("git")
    daemon = GitDaemon(remote.bare.parent)

    class Daemon:
        url = daemon.url(remote.bare.name)
    try:
        daemon.start()
        yield Daemon
    finally:
        daemon.stop()


# -- HTTP(S): nginx + fcgiwrap + git http-backend ------------------------------------------

@pytest.fixture(scope="session")
def test_ca(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1/localhost signed by it; plus a stranger CA."""
    need("openssl")
    directory = tmp_path_factory.mktemp("ca")

    def make_ca(name: str) -> Path:
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory / f"{name}.key", "-out", directory / f"{name}.pem", "-days", "2",
            "-subj", f"/CN=GitFS {name}")
        return directory / f"{name}.pem"

    ca = make_ca("test-ca")
    stranger = make_ca("stranger-ca")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", directory / "server.key", "-out", directory / "server.csr", "-subj", "/CN=127.0.0.1")
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("openssl", "x509", "-req", "-in", directory / "server.csr", "-CA", ca, "-CAkey", directory / "test-ca.key",
        "-CAcreateserial", "-out", directory / "server.pem", "-days", "2", "-extfile", directory / "ext.cnf")

    class CA:
        cert = ca
        stranger_cert = stranger
        server_cert = directory / "server.pem"
        server_key = directory / "server.key"
    return CA


@pytest.fixture
def http_server(tmp_path_factory, remote, test_ca):
    """nginx + fcgiwrap + git http-backend serving the `remote` fixture's directory, with basic auth
    (HTTP_USER / HTTP_PASSWORD) over HTTP and HTTPS."""
    need("nginx", "fcgiwrap", "openssl", GIT_HTTP_BACKEND)
    server = HttpServer(tmp_path_factory.mktemp("nginx"), remote.bare.parent, test_ca)
    try:
        server.start()
        yield server
    finally:
        server.stop()


# -- Git LFS: giftless behind nginx ---------------------------------------------------------

@pytest.fixture
def lfs_http(request, tmp_path, tmp_path_factory, test_ca):
    """An LFS remote at /org/remote.git (giftless wants an organisation) served by nginx +
    git http-backend, with giftless behind the same server blocks, over HTTP and HTTPS with
    basic auth. Its other clone pushes over HTTP with the real git-lfs client, so that
    `big.bin` (2 MiB) and `small.bin` are objects on giftless and `notes.txt` a plain blob.
    Indirect parameter {"upload_rate": "2m"}: nginx lets uploads of objects go at that rate."""
    require_git_lfs()
    need("nginx", "fcgiwrap", "openssl", GIT_HTTP_BACKEND)
    upload_rate = getattr(request, "param", {}).get("upload_rate")
    if upload_rate is not None:
        need(NGINX_STREAM_MODULE)
    remote = LfsRemote(tmp_path / "org")
    giftless = GiftlessServer(tmp_path_factory.mktemp("giftless"))
    nginx = HttpServer(tmp_path_factory.mktemp("nginx"), tmp_path, test_ca, giftless_port=giftless.port,
                       lfs_upload_rate=upload_rate)
    try:
        giftless.start()
        nginx.start()
        http_url = nginx.http_url("org/remote.git")
        credentials = tmp_path / "git-credentials"
        credentials.write_text(http_url.replace("://", f"://{HTTP_USER}:{HTTP_PASSWORD}@").rsplit("/", 2)[0] + "\n")
        run("git", "-C", remote.work, "remote", "set-url", "origin", http_url)
        run("git", "-C", remote.work, "config", "credential.helper", f"store --file={credentials}")
        remote.commit(LFS_FILES, "LFS files")

        class Rig:
            pass
        rig = Rig()
        rig.remote, rig.giftless, rig.nginx, rig.ca = remote, giftless, nginx, test_ca
        rig.http_url, rig.https_url = http_url, nginx.https_url("org/remote.git")
        yield rig
    finally:
        nginx.stop()
        giftless.stop()


@pytest.fixture
def lfs_ssh(lfs_http, sshd, ssh_keys, tmp_path_factory):
    """The lfs_http rig reached over SSH: the plain key's sessions run a forced command (the
    server side of these tests, lfs-over-ssh.sh) that serves git and answers
    `git-lfs-authenticate` with the nginx endpoint and a Basic header, as a forge would
    with a token; with the file `.no_authenticate` present it answers 127 instead."""
    directory = tmp_path_factory.mktemp("lfs-ssh")
    import base64  # noqa: PLC0415
    token = base64.b64encode(f"{HTTP_USER}:{HTTP_PASSWORD}".encode()).decode()
    answer = f'{{"href": "{lfs_http.http_url}/info/lfs", "header": {{"Authorization": "Basic {token}"}}, ' \
             '"expires_in": 3600}'
    script = directory / "lfs-over-ssh.sh"
    script.write_text(f"""#!/bin/sh
# The server side of the SSH LFS tests: git commands as sshd would run them, and
# git-lfs-authenticate answered with the LFS endpoint behind nginx and its credentials.
case "$SSH_ORIGINAL_COMMAND" in
    git-lfs-authenticate*)
        echo "$SSH_ORIGINAL_COMMAND" >> {directory}/authenticate.log
        if [ -e {directory}/.no_authenticate ]; then
            echo "git-lfs-authenticate: command not found" >&2
            exit 127
        fi
        echo '{answer}'
        ;;
    *) exec sh -c "$SSH_ORIGINAL_COMMAND" ;;
esac
""")
    script.chmod(0o755)
    authorized = sshd.directory / "authorized_keys"
    authorized.write_text(f'command="{script}" {ssh_keys.plain.public_line()}\n')

    class Rig:
        url = sshd.url(lfs_http.remote.bare)
        log = directory / "authenticate.log"
        refuse = directory / ".no_authenticate"
        http = lfs_http
    return Rig
