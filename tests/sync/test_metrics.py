"""Layer 2: what the sync cycle and the remote link report to the mount's Metrics, on real
repositories (the rig of conftest.py), read back from the rendered text."""

import pytest

from gitfs.repo.errors import RemoteError
from gitfs.sync.metrics import Metrics
from helpers import make_rig


def samples(metrics: Metrics) -> dict[str, float]:
    """{sample name with its labels: value}; the exposition format itself is checked with
    prometheus_client's parser on a real mount (tests/mount/test_metrics.py)."""
    values = {}
    for line in metrics.render().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_a_fresh_mount_counts_nothing_yet():
    values = samples(Metrics(pending=lambda: {"commits_not_pushed": 3, "changes_not_committed": 2}))
    assert values["gitfs_commits_total"] == 0
    assert values['gitfs_pushes_total{result="ok"}'] == values['gitfs_pushes_total{result="failed"}'] == 0
    assert values['gitfs_fetches_total{result="ok"}'] == values['gitfs_fetches_total{result="failed"}'] == 0
    assert values["gitfs_last_push_success_timestamp_seconds"] == 0
    assert (values["gitfs_pending_commits"], values["gitfs_pending_changes"]) == (3, 2)
    for action in ("commit", "fetch", "push"):
        assert values[f"gitfs_{action}_duration_seconds_count"] == 0


def test_a_cycle_counts_its_commit_fetch_and_push(rig):
    rig.write("notes.txt", "mine\n")
    assert samples(rig.metrics)["gitfs_pending_changes"] == 1
    rig.clock.advance(1)
    rig.cycle.run()
    values = samples(rig.metrics)
    assert values["gitfs_commits_total"] == 1
    assert values['gitfs_pushes_total{result="ok"}'] == 1
    assert values['gitfs_fetches_total{result="ok"}'] == 1
    assert values["gitfs_commit_duration_seconds_count"] == 1
    assert values["gitfs_push_duration_seconds_count"] == values["gitfs_fetch_duration_seconds_count"] == 1
    assert values["gitfs_push_duration_seconds_sum"] > 0
    assert values["gitfs_last_push_success_timestamp_seconds"] > 1.7e9
    assert values["gitfs_pending_commits"] == values["gitfs_pending_changes"] == 0
    rig.cycle.run()  # nothing to commit or push: one more fetch only
    values = samples(rig.metrics)
    assert (values["gitfs_commits_total"], values['gitfs_pushes_total{result="ok"}']) == (1, 1)
    assert values['gitfs_fetches_total{result="ok"}'] == 2


def test_a_refused_push_and_a_conflict_are_counted(rig):
    rig.remote.commit({"testing": "their version\n"}, "theirs")
    rig.write("testing", "my version\n")
    rig.write("other.txt", "mine too\n")
    rig.link.races = 1  # the remote moves between our fetch and our push once
    rig.cycle.run()
    values = samples(rig.metrics)
    assert values["gitfs_conflicts_total"] == 1
    assert values['gitfs_pushes_total{result="failed"}'] == 1
    assert values['gitfs_pushes_total{result="ok"}'] == 1
    assert values["gitfs_push_duration_seconds_count"] == 2


def test_a_failed_fetch_is_counted_and_no_success_time_is_set(remote, tmp_path):
    rig = make_rig(remote, tmp_path / "mine", url=str(tmp_path / "gone.git"))
    rig.write("offline.txt", "written offline\n")
    for _ in range(2):
        with pytest.raises(RemoteError):
            rig.cycle.run()
    values = samples(rig.metrics)
    assert values['gitfs_fetches_total{result="failed"}'] == 2
    assert values['gitfs_fetches_total{result="ok"}'] == 0
    assert values["gitfs_last_fetch_success_timestamp_seconds"] == 0
    assert values["gitfs_commits_total"] == 1
    assert values["gitfs_pending_commits"] == 1
