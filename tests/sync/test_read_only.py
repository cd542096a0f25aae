"""Layer 2: the read-only cycle (gitfs/sync/read_only.py) on real repositories: it follows
the remote and never commits or pushes."""

import logging

from gitfs.sync.read_only import ReadOnlyCycle
from helpers import git


def read_only(rig) -> ReadOnlyCycle:
    return rig.cycle_of(ReadOnlyCycle)


def test_it_fast_forwards_around_the_changes_left_in_the_clone(rig):
    with open(f"{rig.path}/testing", "w") as handle:
        handle.write("left by a crash\n")
    cycle = read_only(rig)
    assert cycle.commit_everything(lambda paths: []) is None
    assert cycle.left_uncommitted == 1
    sha = rig.remote.commit({"theirs.txt": "theirs\n", "testing": "their edit\n"}, "theirs")
    result = cycle.run()
    assert result.complete and result.committed is None and result.pushed is None
    assert str(rig.repo.branch_tip()) == sha
    assert rig.read("theirs.txt") == "theirs\n"
    assert rig.read("testing") == "left by a crash\n"  # for the next read-write mount to commit
    assert "testing" in git("status", "--porcelain", cwd=rig.path)
    cycle.final(1)
    assert rig.remote.head() == sha and str(rig.repo.branch_tip()) == sha


def test_with_local_commits_the_remote_lacks_it_waits_and_says_so_once(rig, caplog):
    rig.write("mine.txt", "mine\n")
    with rig.state.frozen():
        mine = rig.cycle.commit_pending()
    theirs = rig.remote.commit({"theirs.txt": "theirs\n"}, "theirs")
    cycle = read_only(rig)
    with caplog.at_level(logging.WARNING):
        cycle.run()
        cycle.run()
    assert rig.repo.branch_tip() == mine and rig.remote.head() == theirs
    assert len([r for r in caplog.records if "local commits the remote lacks" in r.getMessage()]) == 1
