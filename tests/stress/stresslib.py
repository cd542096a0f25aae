"""Helpers shared by the stress, fault and model tests: the remote's tree as plain
values, the sync status, and "wait until everything is pushed"."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from conftest import git, wait_for

KEEP = ".keep"


def status(mount) -> dict:
    return json.loads((mount.path / ".gitfs" / "status").read_bytes())


def remote_tree(bare: Path, rev: str = "main", prefix: str = "") -> dict[str, tuple[str, bytes]]:
    """{path: (git mode, bytes)} of every blob and link under prefix on rev."""
    args = ["--git-dir", str(bare), "ls-tree", "-r", "-z", rev]
    if prefix:
        args += ["--", prefix]
    out = subprocess.run(["git", *args], capture_output=True, check=True).stdout
    tree = {}
    entries = [e for e in out.split(b"\0") if e]
    shas = []
    for entry in entries:
        meta, path = entry.split(b"\t", 1)
        mode, _type, sha = meta.split()
        shas.append((os.fsdecode(path), mode.decode(), sha.decode()))
    if not shas:
        return tree
    # One cat-file for all blobs: ls-tree + show per file would be slow.
    batch = subprocess.run(["git", "--git-dir", str(bare), "cat-file", "--batch"],
                           input="".join(sha + "\n" for _p, _m, sha in shas).encode(),
                           capture_output=True, check=True).stdout
    position = 0
    for path, mode, _sha in shas:
        header_end = batch.index(b"\n", position)
        size = int(batch[position:header_end].split()[2])
        data = batch[header_end + 1:header_end + 1 + size]
        position = header_end + 1 + size + 1
        tree[path] = (mode, data)
    return tree


def plain_tree(root: Path) -> dict[str, tuple[str, bytes]]:
    """The same shape for a plain directory; an empty directory is DIR/.keep as GitFS stores it."""
    tree = {}
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel + "/"
        for name in dirs + files:
            full = os.path.join(directory, name)
            st = os.lstat(full)
            if os.path.islink(full):
                tree[rel + name] = ("120000", os.fsencode(os.readlink(full)))
            elif os.path.isfile(full):
                tree[rel + name] = ("100755" if st.st_mode & 0o100 else "100644", Path(full).read_bytes())
        if rel and not dirs and not files:
            tree[rel + KEEP] = ("100644", b"")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    return tree


def without_redundant_keeps(tree: dict) -> dict:
    """Drop DIR/.keep where DIR holds something else too (GitFS leaves them; harmless)."""
    dirs_with_content = set()
    for path in tree:
        parent = os.path.dirname(path) if os.path.basename(path) != KEEP else os.path.dirname(os.path.dirname(path))
        while parent not in dirs_with_content:
            dirs_with_content.add(parent)
            if not parent:
                break
            parent = os.path.dirname(parent)
    return {p: v for p, v in tree.items() if not (os.path.basename(p) == KEEP and os.path.dirname(p) in dirs_with_content)}


def wait_synced(mount, timeout=60.0, settle=1.5):
    """Until the mount has nothing pending and the remote's head stopped moving for `settle` s."""
    last = [None, time.monotonic()]

    def synced():
        try:
            pending = status(mount)["pending"]
        except (OSError, ValueError):
            return False
        head = mount.remote.head()
        local = git("rev-parse", "main", cwd=mount.repo_path, check=False).strip()
        if head != last[0]:
            last[0], last[1] = head, time.monotonic()
        return (pending["commits_not_pushed"] == 0 and pending["changes_not_committed"] == 0
                and head == local and time.monotonic() - last[1] >= settle)

    wait_for(synced, timeout=timeout, interval=0.2, message="the mount to finish syncing")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GitDaemon:
    """`git daemon` serving base_path on 127.0.0.1 (receive-pack enabled); stop()/start() at will."""

    def __init__(self, base_path: Path):
        self.base_path = base_path
        self.port = free_port()
        self.process = None

    def url(self, name: str, userinfo: str = "") -> str:
        return f"git://{userinfo}127.0.0.1:{self.port}/{name}"

    def start(self):
        self.process = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
             f"--port={self.port}", f"--base-path={self.base_path}", str(self.base_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def listening():
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", self.port)) == 0
        wait_for(listening, timeout=15, message="git daemon")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None
