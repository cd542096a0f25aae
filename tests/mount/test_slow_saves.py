"""A save never shows as a deletion: Word's save sequence with its steps far apart (as over
a network share, seconds), on a mount that syncs between each step and the next, the
quiet period ending in the middle of the save. No commit on the remote lacks the document,
and no temporary file reaches it."""

from __future__ import annotations

import os

from helpers import commit_marker, commits_after, fetches, git, sync_cycles_pass, wait_for


def test_word_saving_slowly_never_deletes_the_document_on_the_remote(remote, mount_gitfs):
    before = remote.commit({"report.docx": b"PK version 1"}, "the report")
    mount = mount_gitfs(remote, sync_timeout=1, fetch_timeout=600)
    wait_for(lambda: fetches(mount) >= 1, message="the mount's first sync")  # counted from here
    folder = mount.current
    (folder / "~$report.docx").write_bytes(b"owner")
    (folder / "~WRL0001.tmp").write_bytes(b"PK version 2")
    sync_cycles_pass(mount, 1)
    os.rename(folder / "report.docx", folder / "~WRL0002.tmp")
    # The document is missing: one cycle finds the save under way, the next finds it still is.
    sync_cycles_pass(mount, 2, unless=lambda: "report.docx" not in remote.files())
    assert "report.docx" in remote.files(), "the save reached the remote as a deletion"
    assert remote.show("report.docx") == b"PK version 1"
    os.rename(folder / "~WRL0001.tmp", folder / "report.docx")
    wait_for(lambda: remote.show("report.docx") == b"PK version 2", timeout=30, message="the new version")
    os.unlink(folder / "~WRL0002.tmp")
    os.unlink(folder / "~$report.docx")
    marker = commit_marker(mount, remote)
    assert commits_after(remote, before) == [marker, ("Update /report.docx", ["report.docx"])]
    commits = git("--git-dir", str(remote.bare), "rev-list", "main").split()
    for commit in commits[:-1]:  # the remote's first commit is older than the report
        names = git("--git-dir", str(remote.bare), "ls-tree", "--name-only", commit).split("\n")
        assert "report.docx" in names, f"commit {commit} lacks the document"
        assert not any(name.startswith("~") for name in names)
