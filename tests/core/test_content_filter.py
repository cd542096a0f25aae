"""Layer 1: the content filter seam with a filter that is not Git LFS (sealing_filter.py),
on a real clone: the core shows a filtered blob as its content, stages a working file
as the filter cleans it, checks it out open, and a view maps content that cannot be had
to EIO. The filter knows the core only by gitfs/repo/content_filter.py."""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pygit2
import pytest
from mfusepy import FuseOSError

from gitfs.handles import HandleTable
from gitfs.repo.errors import ContentUnavailable
from gitfs.repo.repository import FILEMODE_BLOB, Repository
from gitfs.views.commit import CommitView
from helpers import OWNER, Remote
from sealing_filter import HEADER, SealFilter, seal

PLAN = b"the plan, in the open\n"


@pytest.fixture
def sealed(tmp_path):
    remote = Remote(tmp_path / "sealed")
    remote.commit({".gitattributes": "*.secret filter=seal\n", "plan.secret": seal(PLAN),
                   "broken.secret": HEADER + b"not base64 !!\n", "notes.txt": seal(b"not filtered here")}, "sealed")
    repo = Repository(str(remote.work), remote.branch)
    repo.content_filter = SealFilter(repo)
    return remote, repo


def commit_view(repo):
    tip = repo.branch_tip()
    return CommitView(OWNER, repo, HandleTable(), commit=tip, commit_time=repo.commit_time(tip))


def test_a_filtered_blob_reads_as_its_content_and_a_broken_one_as_eio(sealed):
    _remote, repo = sealed
    view = commit_view(repo)
    assert view.getattr("/plan.secret")["st_size"] == len(PLAN)
    fh = view.open("/plan.secret", os.O_RDONLY)
    try:
        assert view.read("/plan.secret", 100, 0, fh) == PLAN
        assert view.read("/plan.secret", 4, 4, fh) == PLAN[4:8]
    finally:
        view.release("/plan.secret", fh)
    # A path no rule names is what its blob holds, whatever it looks like.
    assert view.getattr("/notes.txt")["st_size"] == len(seal(b"not filtered here"))
    with pytest.raises(FuseOSError) as raised:
        view.open("/broken.secret", os.O_RDONLY)
    assert raised.value.errno == errno.EIO
    with pytest.raises(ContentUnavailable):
        repo.open_content(repo.tree_item(repo.branch_tip(), ["broken.secret"]).oid,
                          repo.tree_item(repo.branch_tip(), ["broken.secret"]).pointer, "broken.secret")


def test_a_working_file_is_committed_as_the_filter_cleans_it_and_checked_out_open(sealed):
    remote, repo = sealed
    (remote.work / "new.secret").write_bytes(b"written in the open\n")
    repo.prepare_staging(["new.secret"])
    assert repo.content_filter.cleaner.prepared == ["new.secret"]
    repo.stage_paths(["new.secret"])
    who = pygit2.Signature("t", "t@example.org")
    tip = repo.commit_index("add new.secret", who)
    entry = repo.tree_item(tip, ["new.secret"], sized=False)
    assert repo.blob_bytes(entry.oid) == seal(b"written in the open\n") and entry.mode == FILEMODE_BLOB
    # The working file holds the content, the index its sealed blob (with the file's stat
    # data): no change to commit, whether git's status hashes the file or not.
    assert repo.changed_paths() == []
    st = os.stat(remote.work / "new.secret")
    os.utime(remote.work / "new.secret", ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))  # status hashes it now
    assert repo.changed_paths() == []
    (remote.work / "new.secret").write_bytes(b"changed in the open\n")
    assert repo.changed_paths() == ["new.secret"]
    source = repo.checkout_source("new.secret", entry.oid, entry.mode)
    assert source is not None and source.read() == b"written in the open\n"


def test_the_second_filter_needs_nothing_of_the_core_but_the_protocols():
    tree = ast.parse((Path(__file__).parents[1] / "sealing_filter.py").read_text(encoding="utf-8"))
    from_core = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and (node.module or "").startswith("gitfs")}
    assert from_core == {"gitfs.repo.content_filter", "gitfs.repo.errors"}
