"""Layer 2: the fetch worker's rounds (gitfs/sync/fetch_worker.py), one at a time with a
fake clock, on real repositories; the thread is never started."""

import threading

from gitfs.repo.remote import transfer as remote_ops
from gitfs.sync.fetch_worker import FetchWorker
from helpers import commit_with


def worker_for(rig, idle_calls: list):
    return FetchWorker(rig.link, rig.state, fetch_timeout=30, idle_fetch_timeout=1800,
                       on_remote_moved=lambda: None, on_idle=lambda: idle_calls.append(rig.clock()))


def test_the_mount_is_told_once_per_idle_spell(rig):
    told: list = []
    worker = worker_for(rig, told)
    worker.tell_idle()
    assert told == []  # just mounted: active
    rig.clock.advance(61)  # idle_after is 60 s
    worker.tell_idle()
    worker.tell_idle()  # a fetch round later in the same spell
    assert told == [rig.clock()]
    rig.state.touch()  # a FUSE call: the spell ends
    worker.tell_idle()
    rig.clock.advance(61)
    worker.tell_idle()
    assert len(told) == 2


def test_a_repository_reads_on_after_giving_its_caches_back(rig, remote):
    sha = commit_with(remote, lambda work: (work / "notes.txt").write_text("kept\n"), message="notes")
    rig.link.fetch()
    repo = rig.repo
    commit = repo.git.revparse_single(sha).id
    handle = repo.git
    item = repo.tree_item(commit, ["notes.txt"])
    assert "notes.txt" in [i.name for i in repo.list_tree_items(repo.root_tree(commit), sizes=True)]
    assert len(repo._trees) == 1  # the root tree, kept parsed
    repo.release_caches()
    assert len(repo._trees) == 0
    assert repo.git is not handle  # the next call opens a handle again
    assert repo.tree_item(commit, ["notes.txt"]) == item
    assert bytes(repo.blob_buffer(item.oid)) == b"kept\n"


def test_a_round_does_not_wait_behind_a_push_in_flight(rig, monkeypatch):
    """The sync worker fetches before it pushes anyway; a round that waited for the push
    would hold an unmount (which stops the fetch worker first) until the push ends."""
    pushing, release = threading.Event(), threading.Event()
    real_push = remote_ops.push

    def slow_push(repo, credentials, **options):
        pushing.set()
        release.wait(60)
        return real_push(repo, credentials, **options)

    monkeypatch.setattr(remote_ops, "push", slow_push)
    rig.write("notes.txt", "mine\n")
    rig.cycle.commit_pending()
    pusher = threading.Thread(target=rig.link.push)
    pusher.start()
    try:
        assert pushing.wait(30)
        in_flight = rig.link.progress.current()
        assert in_flight is not None and in_flight["commits"] == 1
        worker = worker_for(rig, [])
        fetcher = threading.Thread(target=worker.fetch_once)
        fetcher.start()
        fetcher.join(30)
        assert not fetcher.is_alive()
    finally:
        release.set()
        pusher.join(30)
    assert rig.link.progress.current() is None
    assert rig.remote.show("notes.txt") == b"mine\n"
