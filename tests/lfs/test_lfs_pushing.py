"""Layer 1: what a push of Git LFS objects sends and says: the objects it uploads first
(lfs/pushing.py), on a real clone of a path remote that git-lfs pushed to, with its real
store; an LFS server's words as the log and the status get them. No mount."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading

import pygit2

from gitfs.lfs.http import HttpTransfer
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.pushing import upload_before_push
from gitfs.lfs.store import ObjectStore
from gitfs.repo.repository import Repository
from helpers import lfs_repository

SIGNATURE = pygit2.Signature("GitFS", "gitfs@example.com")


def committed(repo: Repository, clone, files: dict[str, bytes], removed=()) -> pygit2.Oid:
    for name, data in files.items():
        (clone / name).write_bytes(data)
    for name in removed:
        (clone / name).unlink()
    paths = [*files, *removed]
    repo.prepare_staging(paths)
    repo.stage_paths(paths)
    oid = repo.commit_index("a change", SIGNATURE)
    assert oid is not None
    return oid


def test_a_replacement_s_push_uploads_only_what_its_own_commit_names(lfs_remote, tmp_path):
    """The server refused a commit that added secret.bin; the user removed it and saved
    ok.bin. The push that replaces the refused commits sends one commit of what current/
    holds now: its upload never sends the refused file's object."""
    clone, repo, lfs = lfs_repository(lfs_remote, tmp_path / "clone")
    secret, ok = b"a key the server's hook refused\n" * 100, b"what may go out\n" * 100
    remote_tip = repo.remote_tip()
    committed(repo, clone, {"secret.bin": secret})  # refused by the server
    local_tip = committed(repo, clone, {"ok.bin": ok}, removed=["secret.bin"])
    replacement = repo.write_replacement("refs/gitfs/replacement", local_tip, remote_tip, "replaces", SIGNATURE)

    assert upload_before_push(repo, replacement) == 1
    objects = {name: Pointer(hashlib.sha256(data).hexdigest(), len(data)) for name, data in
               (("secret.bin", secret), ("ok.bin", ok))}
    assert lfs_remote.object_path(objects["ok.bin"].oid).read_bytes() == ok
    assert not lfs_remote.object_path(objects["secret.bin"].oid).exists()


class Refusing(http.server.BaseHTTPRequestHandler):
    """An LFS server that says no to every batch, in words full of what a terminal acts on."""

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"message": "\x1b[31mno\x1b[0m \x1b]0;pwned\x07uploads today, see "
                                      "https://host/help?access_token=s3cr3t\r\n"}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/vnd.git-lfs+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_an_lfs_server_s_words_are_cleaned_before_anyone_shows_them(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        store = ObjectStore(str(tmp_path / "lfs"))
        data = b"an object\n"
        transfer = HttpTransfer(store, f"http://127.0.0.1:{server.server_port}/repo.git/info/lfs")
        failed = transfer.upload([Pointer(hashlib.sha256(data).hexdigest(), len(data))])
    finally:
        server.shutdown()
        server.server_close()
    (why,) = failed.values()
    assert "403: no uploads today, see https://host/help?access_token=***" in why
    assert not any(ord(character) < 32 for character in why) and "s3cr3t" not in why and "pwned" not in why
