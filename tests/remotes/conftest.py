"""Real Git servers on the loopback interface, each started and stopped by its fixture.

- `sshd`: OpenSSH's sshd with its own host key, authorized_keys and pid file in tmp;
  the remote is the bare repository of the `remote` fixture, reached over ssh://.
- `git_daemon`: `git daemon` serving tmp_path (git://).
- `http_server`: nginx + fcgiwrap + `git http-backend`, basic auth (htpasswd), plain
  HTTP and HTTPS (certificate from a test CA made here with openssl).

Nothing outside tmp is read or written except the binaries themselves (and
/run/sshd, the empty directory sshd insists on, created if missing as the
package would). A fixture skips with the reason when its server is not installed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest



from conftest import wait_for  # tests/conftest.py (this package's conftest is remotes.conftest)

SSHD = "/usr/sbin/sshd"
GIT_HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
HTTP_USER = "alice"
HTTP_PASSWORD = "s3cret-Pa55"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def need(*programs: str) -> None:
    for program in programs:
        if not (os.path.exists(program) if program.startswith("/") else shutil.which(program)):
            pytest.skip(f"{program} is not installed (apt install the package that provides it)")


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(arg) for arg in args], check=True, capture_output=True, text=True, **kwargs)


def stop_process(process: subprocess.Popen, timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- SSH ---------------------------------------------------------------------------------

class KeyPair:
    def __init__(self, directory: Path, name: str, passphrase: str = "", kind: str = "ed25519"):
        self.private = directory / name
        self.public = directory / (name + ".pub")
        self.passphrase = passphrase
        run("ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", name, "-f", self.private)

    def public_line(self) -> str:
        return self.public.read_text().strip()


@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory):
    """Client key pairs: `plain`, `protected` (passphrase), `other` (not authorized)."""
    need("ssh-keygen")
    directory = tmp_path_factory.mktemp("ssh-keys")

    class Keys:
        plain = KeyPair(directory, "plain")
        protected = KeyPair(directory, "protected", passphrase="open sesame")
        other = KeyPair(directory, "other")
        rsa = KeyPair(directory, "rsa", kind="rsa")
    return Keys


class SshServer:
    """One sshd on host:port; stop() and start() keep the port and the host key."""

    def __init__(self, directory: Path, authorized: list[KeyPair], host: str = "127.0.0.1", port: int = 0):
        self.directory = directory
        self.host = host
        self.port = port or free_port(host)
        self.host_key = directory / "ssh_host_ed25519_key"
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.host_key)
        (directory / "authorized_keys").write_text("".join(key.public_line() + "\n" for key in authorized))
        self.log = directory / "sshd.log"
        self.config = directory / "sshd_config"
        self.config.write_text(
            f"ListenAddress {host}\n"
            f"HostKey {self.host_key}\n"
            f"AuthorizedKeysFile {directory / 'authorized_keys'}\n"
            f"PidFile {directory / 'sshd.pid'}\n"
            "StrictModes no\nUsePAM no\nPermitRootLogin yes\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PrintMotd no\nLogLevel VERBOSE\n")
        self.process: subprocess.Popen | None = None

    def known_hosts_line(self) -> str:
        kind, key = Path(str(self.host_key) + ".pub").read_text().split()[:2]
        name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        return f"{name} {kind} {key}\n"

    def start(self) -> None:
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config), "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"))
        wait_for(lambda: port_open(self.host, self.port) or self.process.poll() is not None,
                 timeout=10, message="sshd")
        if self.process.poll() is not None:
            raise AssertionError(f"sshd exited: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None

    def url(self, path, user: str = "root") -> str:
        return f"ssh://{user}@{self.host}:{self.port}{path}"


def _sshd(tmp_path_factory, ssh_keys, **where) -> SshServer:
    need(SSHD, "ssh-keygen")
    # sshd refuses to start without its privilege-separation directory (empty, made by the package).
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    return SshServer(tmp_path_factory.mktemp("sshd"), [ssh_keys.plain, ssh_keys.protected, ssh_keys.rsa], **where)


@pytest.fixture
def sshd(tmp_path_factory, ssh_keys):
    """A running sshd whose host key is in ~/.ssh/known_hosts (HOME is the test's own)."""
    server = _sshd(tmp_path_factory, ssh_keys)
    ssh_dir = Path(os.environ["HOME"]) / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    with open(ssh_dir / "known_hosts", "a") as known:
        known.write(server.known_hosts_line())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def ssh_agent(tmp_path_factory, monkeypatch):
    """An ssh-agent of the test's own (SSH_AUTH_SOCK set); add keys with .add(keypair)."""
    need("ssh-agent", "ssh-add")
    socket_path = tmp_path_factory.mktemp("agent") / "agent.sock"
    process = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_for(lambda: socket_path.exists(), timeout=10, message="ssh-agent")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))

    class Agent:
        path = socket_path

        @staticmethod
        def add(key: KeyPair) -> None:
            env = dict(os.environ, SSH_AUTH_SOCK=str(socket_path), SSH_ASKPASS_REQUIRE="never", DISPLAY="")
            run("ssh-add", "-q", key.private, env=env, stdin=subprocess.DEVNULL)
    yield Agent
    stop_process(process)


# -- git daemon ---------------------------------------------------------------------------

@pytest.fixture
def git_daemon(remote):
    """`git daemon` exporting the `remote` fixture's directory, push enabled."""
    need("git")
    port = free_port()
    base = remote.bare.parent
    process = subprocess.Popen(
        ["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr", f"--base-path={base}",
         f"--port={port}", "--listen=127.0.0.1", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: port_open("127.0.0.1", port) or process.poll() is not None, timeout=10, message="git daemon")
    if process.poll() is not None:
        pytest.fail("git daemon did not start")

    class Daemon:
        url = f"git://127.0.0.1:{port}/{remote.bare.name}"
    yield Daemon
    stop_process(process)


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


class HttpServer:
    def __init__(self, directory: Path, project_root: Path, test_ca):
        self.directory = directory
        self.http_port = free_port()
        self.https_port = free_port()
        self.htpasswd = directory / "htpasswd"
        self.set_password(HTTP_PASSWORD)
        fcgi_socket = directory / "fcgiwrap.sock"
        self.fcgi_socket = fcgi_socket
        for name in ("body", "fastcgi", "proxy", "uwsgi", "scgi"):
            (directory / name).mkdir()
        location = f"""
            location / {{
                auth_basic "git";
                auth_basic_user_file {self.htpasswd};
                client_max_body_size 0;
                fastcgi_pass unix:{fcgi_socket};
                fastcgi_param SCRIPT_FILENAME {GIT_HTTP_BACKEND};
                fastcgi_param GIT_PROJECT_ROOT {project_root};
                fastcgi_param GIT_HTTP_EXPORT_ALL "";
                fastcgi_param PATH_INFO $uri;
                fastcgi_param REMOTE_USER $remote_user;
                fastcgi_param QUERY_STRING $query_string;
                fastcgi_param REQUEST_METHOD $request_method;
                fastcgi_param CONTENT_TYPE $content_type;
                fastcgi_param CONTENT_LENGTH $content_length;
                fastcgi_param HTTP_GIT_PROTOCOL $http_git_protocol;
                fastcgi_param SERVER_PROTOCOL $server_protocol;
                fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            }}"""
        self.config = directory / "nginx.conf"
        self.config.write_text(f"""
user root root;
worker_processes 1;
daemon off;
pid {directory / 'nginx.pid'};
error_log {directory / 'error.log'} info;
events {{ worker_connections 64; }}
http {{
    access_log {directory / 'access.log'};
    client_body_temp_path {directory / 'body'};
    fastcgi_temp_path {directory / 'fastcgi'};
    proxy_temp_path {directory / 'proxy'};
    uwsgi_temp_path {directory / 'uwsgi'};
    scgi_temp_path {directory / 'scgi'};
    server {{
        listen 127.0.0.1:{self.http_port};
        {location}
    }}
    server {{
        listen 127.0.0.1:{self.https_port} ssl;
        ssl_certificate {test_ca.server_cert};
        ssl_certificate_key {test_ca.server_key};
        {location}
    }}
}}
""")
        self.processes: list[subprocess.Popen] = []

    def set_password(self, password: str, user: str = HTTP_USER) -> None:
        hashed = run("openssl", "passwd", "-apr1", password).stdout.strip()
        self.htpasswd.write_text(f"{user}:{hashed}\n")

    def start(self) -> None:
        fcgi = subprocess.Popen(["fcgiwrap", "-c", "4", "-s", f"unix:{self.fcgi_socket}"],
                                stdout=subprocess.DEVNULL, stderr=open(self.directory / "fcgiwrap.log", "ab"))
        self.processes.append(fcgi)
        wait_for(lambda: self.fcgi_socket.exists() or fcgi.poll() is not None, timeout=10, message="fcgiwrap")
        nginx = subprocess.Popen(["nginx", "-p", str(self.directory), "-c", str(self.config),
                                  "-e", str(self.directory / "error.log")],
                                 stdout=subprocess.DEVNULL, stderr=open(self.directory / "nginx.log", "ab"))
        self.processes.append(nginx)
        wait_for(lambda: (port_open("127.0.0.1", self.http_port) and port_open("127.0.0.1", self.https_port))
                 or nginx.poll() is not None, timeout=10, message="nginx")
        if nginx.poll() is not None or fcgi.poll() is not None:
            raise AssertionError(f"nginx or fcgiwrap exited: {(self.directory / 'nginx.log').read_text()}"
                                 f"{(self.directory / 'error.log').read_text()}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            with contextlib.suppress(Exception):
                process.wait(10)
            if process.poll() is None:
                process.kill()
                process.wait()
        self.processes = []
        with contextlib.suppress(FileNotFoundError):
            self.fcgi_socket.unlink()

    def http_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.http_port}/{name}"

    def https_url(self, name: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.https_port}/{name}"


@pytest.fixture
def http_server(tmp_path_factory, remote, test_ca):
    """nginx + fcgiwrap + git http-backend serving the `remote` fixture's directory, with basic auth
    (HTTP_USER / HTTP_PASSWORD) over HTTP and HTTPS."""
    need("nginx", "fcgiwrap", "openssl", GIT_HTTP_BACKEND)
    server = HttpServer(tmp_path_factory.mktemp("nginx"), remote.bare.parent, test_ca)
    server.start()
    yield server
    server.stop()
