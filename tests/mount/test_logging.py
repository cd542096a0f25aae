"""Layer 3: logging: log=FILE and log=- with log_level and debug; one line per
event with time, thread and message; no line per FUSE call below debug level; startup
errors always reach stderr, and the log too.

Logs are for people: only the format is asserted, not the words.
"""

import os
import re

import pytest

from helpers import run_gitfs, wait_for

# 2026-12-03 14:32:12,345 INFO SyncWorker: committed ...
EVENT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [^\s:]+: \S")
CONTINUATION = "    "  # a multi-line message (a traceback) continues indented


def events(text: str) -> list[str]:
    """The log's events; fails on a line that is neither an event nor a continuation."""
    found = []
    for line in text.splitlines():
        if line.startswith(CONTINUATION) and found:
            continue
        assert EVENT.match(line), f"not a log line: {line!r}\nin:\n{text}"
        found.append(line)
    return found


def thread_of(event: str) -> str:
    return event.split(" ", 4)[3].rstrip(":")


def busy(mount, calls=300):
    """Many FUSE calls, none of which changes anything: stat, list, read, failed lookups."""
    for _ in range(calls // 6):
        os.stat(mount.current / "testing")
        os.listdir(mount.current)
        (mount.current / "testing").read_bytes()
        os.listdir(mount.history)
        assert not (mount.current / "missing").exists()
        assert not (mount.path / "nothing-here").exists()


def write_and_sync(mount, remote, name="logged.txt"):
    (mount.current / name).write_text("x\n")
    wait_for(lambda: name in remote.files(), timeout=30, message="the push")


@pytest.mark.parametrize("level", ["info", "warning"])
def test_log_file_has_one_line_per_event_and_none_per_fuse_call(remote, mount_gitfs, level):
    mount = mount_gitfs(remote, log_level=level)
    busy(mount)
    write_and_sync(mount, remote)
    assert mount.stop() == 0
    found = events(mount.log_text())
    assert len(found) <= 12, found  # hundreds of FUSE calls, a handful of events
    if level == "warning":
        assert found == []  # nothing went wrong: nothing to say
    else:
        threads = {thread_of(event) for event in found}
        assert "SyncWorker" in threads or "FinalPush" in threads, found  # the commit and push say who did it
        assert len(threads) >= 2, found


def test_debug_logs_fuse_calls_in_the_same_format(remote, mount_gitfs):
    mount = mount_gitfs(remote, debug=True, log_level="warning")  # debug wins
    busy(mount, calls=60)
    write_and_sync(mount, remote)
    assert mount.stop() == 0
    found = events(mount.log_text())
    per_call = [event for event in found if " DEBUG " in event and thread_of(event).startswith("fuse-")]
    assert len(per_call) >= 10, found  # now per FUSE call (the failed lookups at least), from libfuse's threads


def test_log_to_stderr_with_log_dash(remote, mount_gitfs):
    mount = mount_gitfs(remote, log="-", log_level="info")
    busy(mount, calls=60)
    write_and_sync(mount, remote)
    assert mount.stop() == 0
    stderr = mount.process.stdout.read().decode(errors="replace")  # the fixture merges stderr into it
    found = events(stderr)
    assert 1 <= len(found) <= 12, found
    assert not mount.log.exists()


@pytest.mark.parametrize("mode", ["foreground", "daemon"])
def test_startup_errors_reach_stderr_and_the_log_file(remote, tmp_path, mode):
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    log = tmp_path / "gitfs.log"
    options = f"repo_path={tmp_path / 'clone'},log={log},branch=no-such-branch"
    result = run_gitfs(remote.url, mount_point, "-o", options + (",foreground" if mode == "foreground" else ""))
    assert result.returncode != 0
    (line,) = result.stderr.splitlines()  # one line, no traceback
    assert "no-such-branch" in line
    found = events(log.read_text())
    assert len(found) == 1 and "no-such-branch" in found[0] and " ERROR " in found[0], found
    assert not os.path.ismount(mount_point)


def test_an_unwritable_log_file_is_a_startup_error(remote, tmp_path):
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    result = run_gitfs(remote.url, mount_point, "-o", f"log={tmp_path / 'no-dir' / 'gitfs.log'}")
    assert result.returncode != 0
    (line,) = result.stderr.splitlines()
    assert "log" in line and "Traceback" not in result.stderr
    assert not os.path.ismount(mount_point)
