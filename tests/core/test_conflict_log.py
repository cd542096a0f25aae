"""Layer 1: the log of the remote versions that lost to "accept mine" (gitfs/repo/merging/conflicts.py),
on a real clone: what it keeps, where (the clone's git directory), and for how long."""

import json
import os

import pygit2

from gitfs.repo.merging.conflicts import REF_PREFIX, ConflictLog, folder_name
from gitfs.repo.repository import Repository
from helpers import FakeClock, clone_of, commit_with, git

DAY = 86400
NOW = 1_800_000_000  # the log's clock at the start of each test


def repo_of(remote, path):
    return Repository(str(clone_of(remote, path)), remote.branch)


def test_a_lost_version_is_logged_in_the_git_directory_and_survives_a_new_log(remote, tmp_path, local_timezone):
    local_timezone("UTC0")
    def prepare(work):
        (work / "dir").mkdir()
        (work / "dir/run.sh").write_text("#!/bin/sh\necho theirs\n")
        os.chmod(work / "dir/run.sh", 0o755)
        os.symlink("testing", work / "link")
    theirs = commit_with(remote, prepare, message="theirs")
    repo = repo_of(remote, tmp_path / "clone")
    clock = FakeClock(now=NOW)
    log = ConflictLog(repo, clock=clock)
    folder, when, kept = log.record(["testing", "dir/run.sh", "link", "gone.txt"], pygit2.Oid(hex=theirs))
    assert (folder, when) == ("2027-01-15_08-00-00", clock.now) == (folder_name(clock.now), clock.now)
    assert kept == ["testing", "dir/run.sh", "link"]  # gone.txt: the remote has no version of it
    assert log.folders() == [(folder, clock.now)]
    assert log.files(folder) == dict.fromkeys(kept, pygit2.Oid(hex=theirs))
    assert log.files("2027-01-15_08-00-01") is None
    # In the clone's git directory, never in the working tree; the commit is kept by a ref.
    assert os.path.isfile(tmp_path / "clone/.git/gitfs/conflicts.json")
    assert git("status", "--porcelain", cwd=tmp_path / "clone") == ""
    assert git("rev-parse", REF_PREFIX + theirs, cwd=tmp_path / "clone").strip() == theirs
    again = ConflictLog(Repository(str(tmp_path / "clone"), remote.branch), clock=clock)
    assert again.entries() == log.entries()


def test_the_newest_100_or_the_last_30_days_whichever_is_more(remote, tmp_path):
    repo = repo_of(remote, tmp_path / "clone")
    sha = pygit2.Oid(hex=remote.head())
    clock = FakeClock(now=NOW)
    log = ConflictLog(repo, clock=clock)
    for _ in range(150):  # 150 in the last 30 days: all kept
        log.record(["testing"], sha)
        clock.now += 3600
    assert len(log.entries()) == 150
    clock.now += 40 * DAY  # all older than 30 days now: the newest 100 stay
    log.record(["me"], sha)
    entries = log.entries()
    assert len(entries) == 100 and entries[-1].path == "me"
    assert [entry.timestamp for entry in entries] == sorted(entry.timestamp for entry in entries)
    with open(tmp_path / "clone/.git/gitfs/conflicts.json") as handle:
        assert len(json.load(handle)) == 100


def test_refs_follow_the_log(remote, tmp_path):
    first = remote.head()
    second = remote.commit({"testing": "two\n"}, "two")
    repo = repo_of(remote, tmp_path / "clone")
    clock = FakeClock(now=NOW)
    log = ConflictLog(repo, keep_count=1, keep_days=1, clock=clock)
    log.record(["testing"], pygit2.Oid(hex=first))
    clock.now += 2 * DAY
    log.record(["testing"], pygit2.Oid(hex=second))
    refs = git("for-each-ref", "--format=%(refname)", REF_PREFIX, cwd=tmp_path / "clone").split()
    assert refs == [REF_PREFIX + second]


def test_the_same_path_twice_in_one_second_keeps_the_later(remote, tmp_path):
    first = remote.head()
    second = remote.commit({"testing": "two\n"}, "two")
    repo = repo_of(remote, tmp_path / "clone")
    log = ConflictLog(repo, clock=FakeClock(now=NOW))
    log.record(["testing"], pygit2.Oid(hex=first))
    folder, _when, _kept = log.record(["testing"], pygit2.Oid(hex=second))
    assert log.files(folder) == {"testing": pygit2.Oid(hex=second)}


def test_an_unreadable_log_is_started_afresh(remote, tmp_path, caplog):
    repo = repo_of(remote, tmp_path / "clone")
    os.makedirs(tmp_path / "clone/.git/gitfs")
    (tmp_path / "clone/.git/gitfs/conflicts.json").write_text("{not json")
    log = ConflictLog(repo, clock=FakeClock(now=NOW))
    assert log.entries() == [] and "conflicts.json" in caplog.text
    log.record(["testing"], pygit2.Oid(hex=remote.head()))
    assert len(ConflictLog(repo).entries()) == 1
