"""A save never shows as a deletion: Word's save sequence with its steps seconds apart (as
over a network share), on a mount whose quiet period ends in the middle of it. No commit
on the remote lacks the document, and no temporary file reaches it."""

from __future__ import annotations

import os
import time

from helpers import git, wait_synced


def test_word_saving_slowly_never_deletes_the_document_on_the_remote(remote, mount_gitfs):
    remote.commit({"report.docx": b"PK version 1"}, "the report")
    mount = mount_gitfs(remote, sync_timeout=1)
    wait_synced(mount)
    folder = mount.current
    (folder / "~$report.docx").write_bytes(b"owner")
    (folder / "~WRL0001.tmp").write_bytes(b"PK version 2")
    time.sleep(2)
    os.rename(folder / "report.docx", folder / "~WRL0002.tmp")
    time.sleep(2.5)  # more than two quiet periods: the mount syncs meanwhile
    os.rename(folder / "~WRL0001.tmp", folder / "report.docx")
    time.sleep(2)
    os.unlink(folder / "~WRL0002.tmp")
    os.unlink(folder / "~$report.docx")
    wait_synced(mount)
    assert remote.show("report.docx") == b"PK version 2"
    commits = git("--git-dir", str(remote.bare), "rev-list", "main").split()
    for commit in commits[:-1]:  # the remote's first commit is older than the report
        names = git("--git-dir", str(remote.bare), "ls-tree", "--name-only", commit).split("\n")
        assert "report.docx" in names, f"commit {commit} lacks the document"
        assert not any(name.startswith("~") for name in names)
    assert remote.log()[0] == "Update /report.docx"
