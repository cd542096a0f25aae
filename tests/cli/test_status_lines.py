"""Layer 1: the first line of `gitfs status` while a batch is committed or pushed."""

from __future__ import annotations

from gitfs.status_command import format_status


def state(**in_progress) -> dict:
    return {"remote": "/srv/remote.git", "branch": "main", "pending": {"commits_not_pushed": 1,
                                                                       "changes_not_committed": 2725},
            "in_progress": {"committing": 0, "pushing": None, **in_progress}}


def first_line(**in_progress) -> str:
    return format_status(state(**in_progress)).splitlines()[0]


def test_the_status_says_what_runs():
    assert first_line(committing=2725) == "state:       committing 2,725 changes"
    push = {"commits": 1, "started": "2026-12-05T03:00:00+0000", "objects_sent": 0, "objects_total": None,
            "bytes_sent": 0}
    assert first_line(pushing=push) == "state:       pushing 1 commit (building the pack)"
    push.update(objects_sent=1024, objects_total=2731, bytes_sent=3 * 1024 * 1024)
    assert first_line(pushing=push) == "state:       pushing 1 commit: 1,024 of 2,731 objects sent (3.0 MB)"
    push.update(bytes_sent=0)  # a remote on a local path: libgit2 counts no bytes
    assert first_line(pushing=push) == "state:       pushing 1 commit: 1,024 of 2,731 objects sent"
    assert first_line() == "state:       syncing (changes waiting for the quiet period or the next push)"


def refused_state(writes_refused: bool, denied: str | None = None) -> dict:
    """denied=None: the status file of a daemon that wrote writes_refused only."""
    error = "push to git://host/team.git refused by the server: pre-receive hook declined; the server says: no"
    push = {"time": "2026-12-06T02:00:00+0000", "result": "refused", "error": error,
            "reason": "pre-receive hook declined", "server_says": ["policy: frozen", "2nd"],
            "commit": "0123456789abcdef", "writes_refused": writes_refused}
    if denied is not None:
        push["denied"] = denied
    return {**state(), "last_push": push, "last_error": {"time": "2026-12-06T02:00:00+0000", "message": error}}


def test_a_refused_push_is_told_in_the_server_words_with_what_to_do():
    lines = format_status(refused_state(False)).splitlines()
    assert lines[0] == "state:       the server refused the push; changes are kept locally and retried"
    assert ("last push:   refused at 2026-12-06T02:00:00+0000 by the server: pre-receive hook declined "
            "(commit 0123456789)") in lines
    assert lines[lines.index("server says: policy: frozen") + 1] == "server says: 2nd"
    assert any(line.startswith("what to do:  change or remove what the server names") for line in lines)
    assert not any(line.startswith("last error:") for line in lines)  # the same refusal, said once

    lines = format_status(refused_state(True)).splitlines()
    assert lines[0] == "state:       the server refuses writes from this mount; changes are kept locally and retried"
    assert any("mount it with -o ro" in line for line in lines)


def what_to_do(lines: list[str]) -> str:
    [line] = [line for line in lines if line.startswith("what to do:")]
    return line


def test_credentials_refused_are_told_apart_from_rights_refused():
    lines = format_status(refused_state(True, "credentials")).splitlines()
    assert lines[0] == "state:       the server refuses this mount's credentials; changes are kept locally and retried"
    advice = what_to_do(lines)
    assert "refused this mount's credentials" in advice and "give valid ones" in advice
    assert "write access" not in advice and "-o ro" not in advice

    lines = format_status(refused_state(True, "rights")).splitlines()
    assert lines[0] == "state:       the server refuses writes from this mount; changes are kept locally and retried"
    advice = what_to_do(lines)
    assert "ask for write access" in advice and "-o ro" in advice and "credentials" not in advice

    # An HTTP 403 alone: both, in one line.
    lines = format_status(refused_state(True, "credentials or rights")).splitlines()
    assert lines[0] == "state:       the server refuses writes from this mount; changes are kept locally and retried"
    advice = what_to_do(lines)
    assert "credentials" in advice and "expired" in advice and "write access" in advice and "-o ro" in advice

    # A status file written before `denied` existed reads as before.
    assert what_to_do(format_status(refused_state(True)).splitlines()) == what_to_do(
        format_status(refused_state(True, "rights")).splitlines())
