"""Layer 3: systemd's Type=notify protocol: the daemon sends READY=1 to
$NOTIFY_SOCKET once the mount answers, in foreground and daemon mode, without a
systemd library. The socket is the test's own unix datagram socket.
"""

import configparser
import os
import socket
import struct
import subprocess

import pytest

from helpers import ROOT, fusermount, gitfs_argv, wait_for

EXAMPLES = ROOT / "debian" / "examples"


class NotifySocket:
    """A unix datagram socket like systemd's, which also learns the sender's pid."""

    def __init__(self, address: str):
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(30)

    def receive(self) -> tuple[str, int]:
        """(message, sender pid)."""
        data, ancillary, _flags, _address = self.sock.recvmsg(4096, socket.CMSG_SPACE(struct.calcsize("iII")))
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _uid, _gid = struct.unpack("iII", payload[:struct.calcsize("iII")])
        return data.decode(), pid

    def close(self):
        self.sock.close()


@pytest.fixture
def notify_socket(tmp_path):
    sockets = []

    def make(abstract=False):
        address = f"@gitfs-test-{os.getpid()}-{len(sockets)}" if abstract else str(tmp_path / f"notify{len(sockets)}")
        sockets.append(NotifySocket(address))
        return sockets[-1]

    yield make
    for sock in sockets:
        sock.close()


@pytest.fixture
def place(tmp_path):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    yield mount_point
    if os.path.ismount(mount_point):
        subprocess.run([fusermount(), "-u", str(mount_point)], capture_output=True)


def gitfs(remote, mount_point, options, notify_address):
    command = gitfs_argv(remote.url, mount_point, "-o", options)
    env = dict(os.environ, NOTIFY_SOCKET=notify_address)
    return command, env


def options_for(tmp_path, extra=""):
    return f"repo_path={tmp_path / 'clone'},log={tmp_path / 'gitfs.log'},log_level=info" + extra


def mount_answers(mount_point) -> bool:
    return os.path.ismount(mount_point) and (mount_point / "current" / "testing").read_text() != ""


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_ready_in_foreground_mode_comes_from_the_main_pid_once_the_mount_answers(
        remote, place, notify_socket, tmp_path, abstract):
    sock = notify_socket(abstract=abstract)
    command, env = gitfs(remote, place, options_for(tmp_path, ",foreground"), sock.address)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        message, pid = sock.receive()
        assert "READY=1" in message.split("\n")
        assert pid == process.pid  # Type=notify's default NotifyAccess=main accepts only the main pid
        assert mount_answers(place)
    finally:
        subprocess.run([fusermount(), "-u", str(place)], capture_output=True)
        assert process.wait(timeout=60) == 0
    assert "Traceback" not in process.stdout.read().decode(errors="replace")


def test_ready_in_daemon_mode_comes_from_the_daemon(remote, place, notify_socket, tmp_path):
    sock = notify_socket()
    command, env = gitfs(remote, place, options_for(tmp_path), sock.address)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    try:
        assert (result.returncode, result.stderr) == (0, "")
        message, pid = sock.receive()  # sent before the command returned
        assert "READY=1" in message.split("\n")
        assert pid and os.getsid(pid) == pid  # the detached daemon, not the command that returned
        assert mount_answers(place)
    finally:
        subprocess.run([fusermount(), "-u", str(place)], capture_output=True)
    wait_for(lambda: "exits with status 0" in (tmp_path / "gitfs.log").read_text(), timeout=60,
             message="the daemon to exit")


def test_an_unusable_notify_socket_does_not_stop_the_mount(remote, place, tmp_path):
    command, env = gitfs(remote, place, options_for(tmp_path, ",foreground"), str(tmp_path / "nobody-listens"))
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: process.poll() is None and mount_answers(place), timeout=30, message="the mount")
    finally:
        subprocess.run([fusermount(), "-u", str(place)], capture_output=True)
        assert process.wait(timeout=60) == 0
    log = (tmp_path / "gitfs.log").read_text()
    assert "NOTIFY_SOCKET" in log and "Traceback" not in log


# -- the shipped examples ---------------------------------------------------------------

def unit(path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(path.read_text())
    return parser


def test_service_template_is_type_notify_in_foreground():
    service = unit(EXAMPLES / "gitfs@.service")
    assert service["Service"]["Type"] == "notify"
    start = service["Service"]["ExecStart"]
    assert start.startswith("/usr/bin/gitfs ") and "foreground" in start
    assert "fusermount3 -u" in service["Service"]["ExecStop"]
    assert "network-online.target" in service["Unit"]["After"]


def test_mount_unit_example_uses_the_fuse_gitfs_type():
    (path,) = EXAMPLES.glob("*.mount")
    mount = unit(path)
    assert mount["Mount"]["Type"] == "fuse.gitfs"
    where = mount["Mount"]["Where"]
    # systemd requires the unit's name to be the escaped mount point.
    escaped = subprocess.run(["systemd-escape", "--path", where], capture_output=True, text=True)
    expected = escaped.stdout.strip() if escaped.returncode == 0 else where.strip("/").replace("/", "-")
    assert path.name == expected + ".mount"
