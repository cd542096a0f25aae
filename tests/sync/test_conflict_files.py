"""Layer 2: a sync that keeps the local version logs the remote's (ConflictRecorder), and the
status names where it can be read; on real repositories, no mount."""

import os

from gitfs.handles import HandleTable
from gitfs.repo.merging.conflicts import ConflictLog
from gitfs.sync.status import ConflictRecorder, SyncStatus
from gitfs.views.base import Owner
from gitfs.views.conflicts import ConflictsView


def test_the_losing_version_is_logged_and_named_in_the_status(rig):
    rig.cycle.conflict_report = ConflictRecorder(ConflictLog(rig.repo), rig.status)
    theirs = rig.remote.commit({"testing": "their version\n", "sub/deep.txt": "theirs\n"}, "theirs")
    rig.write("testing", "my version\n")
    rig.write("sub/deep.txt", "mine\n")
    assert sorted(rig.cycle.run().conflicts) == ["sub/deep.txt", "testing"]
    entries = {entry["path"]: entry for entry in rig.status.snapshot()["conflicts"]}
    assert set(entries) == {"testing", "sub/deep.txt"}
    (folder,) = [name for name, _time in rig.cycle.conflict_report.log.folders()]
    for path, entry in entries.items():
        assert entry["remote_commit"] == theirs
        assert entry["file"] == f".gitfs/conflicts/{folder}/{path}"
    # What .gitfs/conflicts/ serves (the view called directly).
    view = ConflictsView(Owner(0, 0), rig.cycle.conflict_report.log, rig.repo, HandleTable(), mount_time=0)
    assert view.readdir("/", None) == [".", "..", folder]
    assert view.readdir(f"/{folder}", None) == [".", "..", "sub", "testing"]
    assert view.readdir(f"/{folder}/sub", None) == [".", "..", "deep.txt"]
    for path, content in (("testing", b"their version\n"), ("sub/deep.txt", b"theirs\n")):
        fh = view.open(f"/{folder}/{path}", os.O_RDONLY)
        assert view.read(f"/{folder}/{path}", 100, 0, fh) == content
        assert view.getattr(f"/{folder}/{path}")["st_size"] == len(content)
        view.release(f"/{folder}/{path}", fh)


def test_a_new_mount_shows_the_conflicts_its_clone_kept(rig):
    rig.cycle.conflict_report = ConflictRecorder(ConflictLog(rig.repo), rig.status)
    theirs = rig.remote.commit({"testing": "their version\n"}, "theirs")
    rig.write("testing", "my version\n")
    rig.cycle.run()
    status = SyncStatus(remote="r", branch="main", pending=dict)
    ConflictRecorder(ConflictLog(rig.repo), status)  # as the next mount builds it
    (entry,) = status.snapshot()["conflicts"]
    assert entry["path"] == "testing" and entry["remote_commit"] == theirs
    assert entry["file"].startswith(".gitfs/conflicts/") and entry["file"].endswith("/testing")
