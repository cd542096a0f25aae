"""Layer 3: MOUNTPOINT/.gitfs/metrics on a real mount, read by prometheus_client's own parser
(the text exposition format 0.0.4 that Prometheus scrapes)."""

import errno
import os
import signal
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers import read_status, wait_for

COUNTERS = ["gitfs_commits", "gitfs_pushes", "gitfs_push_refusals", "gitfs_fetches", "gitfs_conflicts",
            "gitfs_lfs_objects", "gitfs_lfs_bytes", "gitfs_lfs_missing_objects", "gitfs_pushed_bytes"]
GAUGES = ["gitfs_pending_commits", "gitfs_pending_changes", "gitfs_last_push_success_timestamp_seconds",
          "gitfs_last_fetch_success_timestamp_seconds", "gitfs_changes_committing", "gitfs_push_in_progress",
          "gitfs_push_objects_sent", "gitfs_push_objects_to_send", "gitfs_push_bytes_sent"]
SUMMARIES = ["gitfs_commit_duration_seconds", "gitfs_fetch_duration_seconds", "gitfs_push_duration_seconds"]


def scrape(mount) -> dict:
    """{family name: family}, as Prometheus would read the file."""
    text = (mount.path / ".gitfs" / "metrics").read_text(encoding="utf-8")
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families, sample_name, **labels) -> float:
    for family in families.values():
        for sample in family.samples:
            if sample.name == sample_name and sample.labels == labels:
                return sample.value
    raise AssertionError(f"no sample {sample_name}{labels}")


def test_every_metric_is_there_with_help_and_type(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    families = scrape(mount)
    kinds = {name: family.type for name, family in families.items()}
    assert kinds == {**dict.fromkeys(COUNTERS, "counter"), **dict.fromkeys(GAUGES, "gauge"),
                     **dict.fromkeys(SUMMARIES, "summary")}
    assert all(family.documentation for family in families.values())
    for action in ("pushes", "fetches"):
        assert {tuple(sample.labels.items()) for sample in families[f"gitfs_{action}"].samples} == {
            (("result", "ok"),), (("result", "failed"),)}


def test_a_write_is_counted_as_a_commit_and_a_push(remote, mount_gitfs):
    started = time.time()
    mount = mount_gitfs(remote)
    (mount.current / "counted.txt").write_text("one\n")
    wait_for(lambda: "counted.txt" in remote.files(), message="the push")
    wait_for(lambda: value(scrape(mount), "gitfs_pushes_total", result="ok") >= 1, message="the push counted")
    families = scrape(mount)
    assert value(families, "gitfs_commits_total") >= 1
    assert value(families, "gitfs_commit_duration_seconds_count") >= 1
    assert value(families, "gitfs_commit_duration_seconds_sum") > 0
    assert value(families, "gitfs_push_duration_seconds_count") >= 1
    assert value(families, "gitfs_fetches_total", result="ok") >= 1
    assert value(families, "gitfs_last_push_success_timestamp_seconds") >= int(started)
    assert value(families, "gitfs_last_fetch_success_timestamp_seconds") >= int(started)
    assert value(families, "gitfs_pushes_total", result="failed") == 0
    wait_for(lambda: value(scrape(mount), "gitfs_pending_commits") == 0, message="nothing pending")
    assert value(scrape(mount), "gitfs_pending_changes") == 0


def test_failures_pending_work_and_conflicts_are_counted(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=60, fetch_timeout=60, expect_errors=True)
    (mount.current / "testing").write_text("mine\n")
    wait_for(lambda: value(scrape(mount), "gitfs_pending_changes") == 1, message="one change pending")
    away = remote.bare.with_name("remote-away.git")
    remote.bare.rename(away)
    try:
        os.kill(mount.process.pid, signal.SIGUSR1)
        wait_for(lambda: value(scrape(mount), "gitfs_fetches_total", result="failed") >= 1,
                 message="the failed fetch counted")
        families = scrape(mount)
        assert value(families, "gitfs_pending_commits") == 1
        assert value(families, "gitfs_pending_changes") == 0
    finally:
        away.rename(remote.bare)
    theirs = remote.commit({"testing": "theirs\n"}, "their change")
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: remote.head() != theirs, timeout=30, message="the push after accept-mine")
    wait_for(lambda: value(scrape(mount), "gitfs_conflicts_total") == 1, message="the conflict counted")
    assert any(c["path"] == "testing" for c in read_status(mount)["conflicts"])


def test_the_metrics_file_is_read_only(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    metrics = mount.path / ".gitfs" / "metrics"
    assert os.stat(metrics).st_mode & 0o777 == 0o444
    for attempt in (lambda: open(metrics, "w"), lambda: open(metrics, "a"), lambda: os.unlink(metrics),
                    lambda: os.truncate(metrics, 0), lambda: os.rename(metrics, metrics.with_name("m"))):
        with pytest.raises(OSError) as raised:
            attempt()
        assert raised.value.errno == errno.EROFS, raised.value
    with pytest.raises(OSError) as raised:
        os.listdir(metrics)
    assert raised.value.errno == errno.ENOTDIR
