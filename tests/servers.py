"""Real servers on 127.0.0.1 for the tests, each in a process group of its own.

- `SshServer`: OpenSSH's sshd with its own host key, authorized_keys and pid file in a
  temporary directory; remotes are reached over ssh://.
- `GitoliteServer`: gitolite (Debian's gitolite3) behind an sshd of its own, its HOME in a
  temporary directory; users told apart by their keys, rules set by writing gitolite.conf.
- `GitDaemon`: `git daemon` serving a directory (git://), receive-pack enabled.
- `HttpServer`: nginx + fcgiwrap + `git http-backend`, basic auth (htpasswd), plain
  HTTP and HTTPS (with a certificate the test CA fixture signs); given a giftless port,
  the same server blocks proxy Git LFS requests to it (git-lfs's derived endpoint).
- `GiftlessServer`: giftless, a Git LFS server (PyPI), from the virtual environment
  .ci/install-deps makes for it, objects in a folder of the test's.

Every server starts with `start_new_session=True`, so it and whatever it forks
(fcgiwrap's workers, sshd's and git daemon's per-connection children, nginx's
worker) share one process group; `stop_group` ends the whole group and checks
that no member is left. The fixtures in remotes/conftest.py stop their servers in
a `finally`, so a failing test or a server that fails to start leaves nothing behind.
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

from helpers import wait_for

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


def start_server(command: list, **popen) -> subprocess.Popen:
    """Start a server in a new session (its own process group), for stop_group."""
    return subprocess.Popen([str(arg) for arg in command], start_new_session=True, **popen)


def wait_listening(process: subprocess.Popen, port: int, name: str, *, host: str = "127.0.0.1",
                   timeout: float = 15, output=lambda: "") -> None:
    """Until a server started by start_server listens on host:port; fails with what
    `output()` gives (its log) if it exited first."""
    wait_for(lambda: port_open(host, port) or process.poll() is not None, timeout=timeout, message=name)
    if process.poll() is not None:
        raise AssertionError(f"{name} exited with {process.returncode}: {output()}")


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(int(entry))
    return members


def stop_group(process: subprocess.Popen, timeout: float = 10) -> None:
    """End a server started by start_server and everything it forked: SIGTERM to the group,
    SIGKILL to what is left after `timeout` s; fails if a member of the group survives."""
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        wait_for(lambda: not group_members(pgid), timeout=timeout, interval=0.05,
                 message=f"process group {pgid} ({process.args[0]}) to exit")
    except AssertionError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    process.wait(timeout)
    wait_for(lambda: not group_members(pgid), timeout=timeout, interval=0.05,
             message=f"process group {pgid} ({process.args[0]}) to exit after SIGKILL")


# -- SSH ---------------------------------------------------------------------------------

class KeyPair:
    def __init__(self, directory: Path, name: str, passphrase: str = "", kind: str = "ed25519"):
        self.private = directory / name
        self.public = directory / (name + ".pub")
        self.passphrase = passphrase
        run("ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", name, "-f", self.private)

    def public_line(self) -> str:
        return self.public.read_text().strip()


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
        with open(self.log, "ab") as log:
            self.process = start_server([SSHD, "-D", "-e", "-f", self.config, "-p", self.port],
                                        stdout=subprocess.DEVNULL, stderr=log)
        wait_listening(self.process, self.port, "sshd", host=self.host, timeout=10, output=self.log.read_text)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None

    def url(self, path, user: str = "root") -> str:
        return f"ssh://{user}@{self.host}:{self.port}{path}"


def sshd_server(directory: Path, keys, **where) -> SshServer:
    """An SshServer (not started) in `directory` that lets in keys.plain, .protected and .rsa
    of the ssh_keys fixture; `where`: host and port."""
    need(SSHD, "ssh-keygen")
    # sshd refuses to start without its privilege-separation directory (empty, made by the package).
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    return SshServer(directory, [keys.plain, keys.protected, keys.rsa], **where)

# -- gitolite over SSH --------------------------------------------------------------------

GITOLITE = "/usr/bin/gitolite"
GITOLITE_SHELL = "/usr/share/gitolite3/gitolite-shell"


class GitoliteServer:
    """gitolite (Debian's gitolite3) behind an sshd of its own, to be refused as a forge refuses.

    gitolite keeps everything under $HOME (~/.gitolite.rc, ~/.gitolite, ~/repositories), so its
    HOME is `home`, a temporary directory, and every gitolite command and session runs with
    HOME set to it (all as root, the tests' user: no system account is needed). The sshd's
    authorized_keys is written here, one forced-command line per gitolite user, because the
    key is what names the user: every user logs in as the same unix user (root) and sshd runs
    `gitolite-shell USER` with that HOME. Rules change as gitolite's "administering directly on
    the server" says: write ~/.gitolite/conf/gitolite.conf, `gitolite compile`, `gitolite
    trigger POST_COMPILE` (nothing is pushed to gitolite-admin). New repositories get HEAD
    refs/heads/main (init.defaultBranch in gitolite's environment)."""

    def __init__(self, directory: Path, users: dict[str, KeyPair], host: str = "127.0.0.1", port: int = 0):
        need(SSHD, "ssh-keygen", "git", GITOLITE, GITOLITE_SHELL)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # as in sshd_server
        self.directory = directory
        self.home = directory / "gitolite-home"
        self.home.mkdir()
        self.users = dict(users)
        self.seeded: dict[str, str] = {}  # repository -> the commit seed() pushed
        self.ssh = SshServer(directory, [], host=host, port=port)
        self.host, self.port = self.ssh.host, self.ssh.port
        self.known_hosts = directory / "known_hosts"  # for the git CLI runs of seed()
        self.known_hosts.write_text(self.ssh.known_hosts_line())
        self.write_authorized_keys()
        # The admin key only owns gitolite-admin (setup wants one); it never logs in.
        admin_dir = directory / "admin-key"
        admin_dir.mkdir()
        self.gitolite("setup", "-pk", KeyPair(admin_dir, "admin").public)

    def env(self) -> dict:
        return dict(os.environ, HOME=str(self.home), GIT_CONFIG_COUNT="1",
                    GIT_CONFIG_KEY_0="init.defaultBranch", GIT_CONFIG_VALUE_0="main")

    def gitolite(self, *args) -> subprocess.CompletedProcess:
        return run(GITOLITE, *args, env=self.env())

    def write_authorized_keys(self) -> None:
        """One line per user: sshd runs gitolite-shell as that user, with gitolite's HOME."""
        lines = [f'command="HOME={self.home} {GITOLITE_SHELL} {user}",no-port-forwarding,no-X11-forwarding,'
                 f"no-agent-forwarding,no-pty {key.public_line()}\n" for user, key in self.users.items()]
        (self.directory / "authorized_keys").write_text("".join(lines))

    def set_rules(self, conf: str) -> None:
        """Replace gitolite.conf (gitolite-admin's own rule is kept) and compile it; repositories
        named for the first time are created, empty."""
        admin = "repo gitolite-admin\n    RW+ = admin\n\n"
        (self.home / ".gitolite" / "conf" / "gitolite.conf").write_text(admin + conf)
        self.gitolite("compile")
        self.gitolite("trigger", "POST_COMPILE")

    def repository(self, name: str) -> Path:
        """The bare repository on disk (to look at, not to push into: gitolite's hooks want a user)."""
        return self.home / "repositories" / f"{name}.git"

    def url(self, name: str, user: str = "root") -> str:
        """ssh:// URL of repository `name`; the unix user is root for everyone, the key picks the
        gitolite user."""
        return f"ssh://{user}@{self.host}:{self.port}/{name}"

    def known_hosts_line(self) -> str:
        return self.ssh.known_hosts_line()

    def ssh_command(self, user: str) -> str:
        """GIT_SSH_COMMAND for the git CLI as gitolite user `user` (their key only)."""
        key = self.users[user]
        return (f"ssh -i {key.private} -o IdentitiesOnly=yes -o UserKnownHostsFile={self.known_hosts} "
                "-o StrictHostKeyChecking=yes -o BatchMode=yes")

    def git_env(self, user: str) -> dict:
        return dict(os.environ, GIT_SSH_COMMAND=self.ssh_command(user))

    def seed(self, name: str, user: str, files: dict[str, str], message: str = "initial",
             branch: str = "main") -> str:
        """Push one commit with `files` to `branch` of the (empty) repository, over SSH as `user`
        with the git CLI, so gitolite's rules and hooks see it as any push; its sha (also in
        `seeded`)."""
        work = self.directory / f"seed-{name}"
        run("git", "init", "-q", "-b", branch, work)
        for path, text in files.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text)
        run("git", "-C", work, "add", "-A")
        run("git", "-C", work, "commit", "-q", "-m", message)
        run("git", "-C", work, "push", "-q", self.url(name), f"HEAD:refs/heads/{branch}", env=self.git_env(user))
        self.seeded[name] = run("git", "-C", work, "rev-parse", "HEAD").stdout.strip()
        return self.seeded[name]

    def start(self) -> None:
        self.ssh.start()

    def stop(self) -> None:
        self.ssh.stop()


# -- git daemon ---------------------------------------------------------------------------

class GitDaemon:
    """`git daemon` serving base_path on 127.0.0.1 (receive-pack enabled); stop()/start() at will,
    on the same port."""

    def __init__(self, base_path: Path):
        self.base_path = base_path
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def url(self, name: str, userinfo: str = "") -> str:
        return f"git://{userinfo}127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self.process = start_server(
            ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
             f"--port={self.port}", f"--base-path={self.base_path}", self.base_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.process, self.port, "git daemon")

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None


# -- HTTP(S): nginx + fcgiwrap + git http-backend ------------------------------------------

NGINX_STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so"  # Debian's libnginx-mod-stream


def lfs_locations(giftless_port: int, htpasswd: Path, storage_port: int | None = None) -> str:
    """nginx locations for LFS under any repository path: the batch API with the same basic
    auth as git (Authorization not passed on: giftless lets anyone in behind it), the object
    storage without (giftless checks its own bearer token there), through storage_port if
    given (the upload-rate limit: HttpServer)."""
    def proxy(port: int) -> str:
        return f"""
                client_max_body_size 0;
                proxy_pass http://127.0.0.1:{port};
                proxy_set_header Host $http_host;
                proxy_set_header X-Forwarded-Proto $scheme;
                proxy_request_buffering off;
                proxy_buffering off;
                proxy_read_timeout 300s;"""
    return f"""
            location ~ ^/.+\\.git/info/lfs/objects/storage/ {{{proxy(storage_port or giftless_port)}
            }}
            location ~ ^/.+\\.git/info/lfs/ {{
                auth_basic "git";
                auth_basic_user_file {htpasswd};
                proxy_set_header Authorization "";{proxy(giftless_port)}
            }}"""


class HttpServer:
    """nginx serving git over HTTP and HTTPS, and giftless's LFS API if giftless_port is given.
    lfs_upload_rate (nginx's rate, "2m": bytes a second) slows what clients send to the LFS
    object storage: nginx's http module limits only responses, so the storage location goes
    through a stream proxy of the same nginx (ngx_stream_module) whose proxy_upload_rate
    holds the request body back; the client's upload is paced by that."""

    def __init__(self, directory: Path, project_root: Path, test_ca, giftless_port: int | None = None,
                 lfs_upload_rate: str | None = None):
        self.directory = directory
        self.http_port = free_port()
        self.https_port = free_port()
        self.htpasswd = directory / "htpasswd"
        self.lfs_htpasswd = directory / "lfs-htpasswd"  # the same password, changed apart in tests
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
        load_stream, stream = "", ""
        if giftless_port is not None:
            storage_port = None
            if lfs_upload_rate is not None:
                storage_port = free_port()
                load_stream = f"load_module {NGINX_STREAM_MODULE};"
                stream = f"""
stream {{
    server {{
        listen 127.0.0.1:{storage_port};
        proxy_pass 127.0.0.1:{giftless_port};
        proxy_upload_rate {lfs_upload_rate};
    }}
}}"""
            location += lfs_locations(giftless_port, self.lfs_htpasswd, storage_port)
        self.config = directory / "nginx.conf"
        self.config.write_text(f"""{load_stream}
user root root;
worker_processes 1;
daemon off;
pid {directory / 'nginx.pid'};
error_log {directory / 'error.log'} info;
events {{ worker_connections 64; }}
http {{
    log_format with_host '$host:$server_port $remote_user "$request" $status';
    access_log {directory / 'access.log'} with_host;
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
}}{stream}
""")
        self.processes: list[subprocess.Popen] = []

    def set_password(self, password: str, user: str = HTTP_USER, *, lfs_only: bool = False) -> None:
        hashed = run("openssl", "passwd", "-apr1", password).stdout.strip()
        for path in (self.lfs_htpasswd,) if lfs_only else (self.htpasswd, self.lfs_htpasswd):
            path.write_text(f"{user}:{hashed}\n")

    def start(self) -> None:
        with open(self.directory / "fcgiwrap.log", "ab") as log:
            fcgi = start_server(["fcgiwrap", "-c", "4", "-s", f"unix:{self.fcgi_socket}"],
                                stdout=subprocess.DEVNULL, stderr=log)
        self.processes.append(fcgi)
        wait_for(lambda: self.fcgi_socket.exists() or fcgi.poll() is not None, timeout=10, message="fcgiwrap")
        with open(self.directory / "nginx.log", "ab") as log:
            nginx = start_server(["nginx", "-p", self.directory, "-c", self.config,
                                  "-e", self.directory / "error.log"],
                                 stdout=subprocess.DEVNULL, stderr=log)
        self.processes.append(nginx)
        wait_for(lambda: (port_open("127.0.0.1", self.http_port) and port_open("127.0.0.1", self.https_port))
                 or nginx.poll() is not None, timeout=10, message="nginx")
        if nginx.poll() is not None or fcgi.poll() is not None:
            raise AssertionError(f"nginx or fcgiwrap exited: {(self.directory / 'nginx.log').read_text()}"
                                 f"{(self.directory / 'error.log').read_text()}")

    def stop(self) -> None:
        """nginx first (no new requests), then fcgiwrap and its workers; each as a whole group."""
        try:
            while self.processes:
                stop_group(self.processes[-1])
                self.processes.pop()
        finally:
            for process in self.processes:  # one group outlived SIGKILL: still end the others
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(FileNotFoundError):
                self.fcgi_socket.unlink()

    def http_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.http_port}/{name}"

    def https_url(self, name: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.https_port}/{name}"




# -- Git LFS: giftless ------------------------------------------------------------------------

GIFTLESS_PYTHON = os.environ.get("GITFS_GIFTLESS_PYTHON", "/opt/gitfs-giftless/bin/python")
GIFTLESS_RUN = ("import sys; from werkzeug.serving import run_simple; from giftless.wsgi_entrypoint import app; "
                "run_simple('127.0.0.1', int(sys.argv[1]), app, threaded=True)")


class GiftlessServer:
    """giftless on 127.0.0.1, anonymous read-write (nginx in front does the basic auth),
    objects in storage/ORG/REPO/OID; behind HTTPS it learns the scheme from X-Forwarded-Proto."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.port = free_port()
        self.storage = directory / "storage"
        self.storage.mkdir()
        self.log = directory / "giftless.log"
        self.config = directory / "giftless.yaml"
        self.config.write_text(f"""
AUTH_PROVIDERS:
  - giftless.auth.allow_anon:read_write
LEGACY_ENDPOINTS: false
TRANSFER_ADAPTERS:
  basic:
    factory: giftless.transfer.basic_streaming:factory
    options:
      storage_class: giftless.storage.local_storage:LocalStorage
      storage_options:
        path: {self.storage}
PRE_AUTHORIZED_ACTION_PROVIDER:
  factory: giftless.auth.jwt:factory
  options:
    algorithm: HS256
    private_key: gitfs-test-key
MIDDLEWARE:
  - class: werkzeug.middleware.proxy_fix:ProxyFix
    kwargs:
      x_proto: 1
""")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        if not os.path.exists(GIFTLESS_PYTHON):
            pytest.fail(f"giftless is not installed ({GIFTLESS_PYTHON}): .ci/install-deps installs it")
        env = dict(os.environ, GIFTLESS_CONFIG_FILE=str(self.config))
        env.pop("PYTHONPATH", None)
        with open(self.log, "ab") as log:
            self.process = start_server([GIFTLESS_PYTHON, "-c", GIFTLESS_RUN, self.port], cwd=self.directory,
                                        env=env, stdout=log, stderr=log)
        wait_listening(self.process, self.port, "giftless", timeout=30, output=self.log.read_text)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None

    def object_path(self, oid: str) -> Path | None:
        found = list(self.storage.rglob(oid))
        return found[0] if found else None


# -- Samba ------------------------------------------------------------------------------------

SMBD = "/usr/sbin/smbd"
SMB_SHARE = "team"
# What every smb.conf here says, server's and client's: nothing is read or written under
# /etc/samba, /var/lib/samba, /var/cache/samba or /run/samba, so the system's Samba (if any)
# and these never meet; `{dir}` is the server's or the client's own directory.
SMB_PRIVATE_PATHS = """\
   lock directory = {dir}/lock
   state directory = {dir}/state
   cache directory = {dir}/cache
   pid directory = {dir}/pid
   private dir = {dir}/private
   ncalrpc dir = {dir}/ncalrpc
   log file = {dir}/log.%m
   logging = file
"""


class SmbServer:
    """Debian's smbd in the foreground sharing `share_path` as //127.0.0.1/team on a free
    port, with an smb.conf of its own under `directory` (standalone, loopback only, no
    NetBIOS, no printers): guests are let in (smbclient -N) and act as root (`force user`), root
    being the GitFS mount's user, so the mount needs no allow_other. extra_share_options and
    extra_global_options are smb.conf lines added to [team] and [global], e.g.
    `vfs objects = catia fruit streams_xattr` for a share as macOS clients use them.

    client() runs the real smbclient with a config of its own too (`-s`): without one it
    reads /etc/samba/smb.conf and keeps its caches in /var/cache/samba."""

    def __init__(self, directory: Path, share_path: Path, *, extra_share_options: str = "",
                 extra_global_options: str = ""):
        need(SMBD, "smbclient")
        self.directory = directory
        self.share_path = share_path
        self.port = free_port()
        self.client_directory = directory / "client"
        for base in (directory, self.client_directory):
            for name in ("lock", "state", "cache", "pid", "private", "ncalrpc"):
                (base / name).mkdir(parents=True, exist_ok=True)
        self.config = directory / "smb.conf"
        self.config.write_text(
            "[global]\n"
            "   server role = standalone server\n"
            "   map to guest = bad user\n"
            "   interfaces = 127.0.0.1\n"
            "   bind interfaces only = yes\n"
            f"   smb ports = {self.port}\n"
            "   disable netbios = yes\n"
            "   load printers = no\n"
            "   printcap name = /dev/null\n"
            "   disable spoolss = yes\n"
            "   log level = 1\n"
            + SMB_PRIVATE_PATHS.format(dir=directory)
            + extra_global_options.rstrip("\n") + "\n"
            f"[{SMB_SHARE}]\n"
            f"   path = {share_path}\n"
            "   read only = no\n"
            "   guest ok = yes\n"
            "   force user = root\n"
            + extra_share_options.rstrip("\n") + "\n")
        self.client_config = directory / "client.conf"
        self.client_config.write_text("[global]\n   disable netbios = yes\n"
                                      + SMB_PRIVATE_PATHS.format(dir=self.client_directory))
        self.output = directory / "smbd.out"  # what smbd says before its log files are open
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        # --no-process-group: smbd would otherwise make a group of its own, out of stop_group's reach.
        with open(self.output, "ab") as out:
            self.process = start_server([SMBD, "--foreground", "--no-process-group",
                                         f"--configfile={self.config}"],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        wait_listening(self.process, self.port, "smbd", timeout=30, output=self.log_text)

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None

    def log_text(self) -> str:
        """smbd's own output, then its log files (log.smbd, and one per client: log.127.0.0.1)."""
        parts = []
        for path in [self.output, *sorted(self.directory.glob("log.*"))]:
            if path.exists():
                parts.append(f"== {path.name}\n{path.read_text(errors='replace')}")
        return "\n".join(parts)

    def client(self, *commands: str, cwd: Path | None = None, timeout: float = 60) -> str:
        """`smbclient //127.0.0.1/team -N -c "CMD1; CMD2"` as a guest; its stdout and stderr
        together. Local file names in put/get are relative to `cwd`. It exits 0 even when a
        command failed (the NT_STATUS_ line is all there is): client_ok checks that."""
        done = subprocess.run(["smbclient", f"//127.0.0.1/{SMB_SHARE}", "-p", str(self.port), "-N",
                               "-s", str(self.client_config), "-c", "; ".join(commands)],
                              cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return done.stdout + done.stderr

    def client_ok(self, *commands: str, **kwargs) -> str:
        """client(), failing the test if any command answered an NT_STATUS_ error. (Samba
        4.22's `allinfo` also asks for shadow copies, which a share without the shadow_copy
        module answers with NT_STATUS_INVALID_DEVICE_REQUEST: not a failure.)"""
        output = self.client(*commands, **kwargs)
        if any("NT_STATUS_" in line and "shadow copy data" not in line for line in output.splitlines()):
            raise AssertionError(f"smbclient {'; '.join(commands)!r} failed:\n{output}")
        return output
