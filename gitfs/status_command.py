"""`gitfs status MOUNTPOINT`: the mount's sync status, for humans."""

from __future__ import annotations

import json
import os

from gitfs.errors import FatalError
from gitfs.repo.errors import DENIED_CREDENTIALS, DENIED_EITHER, DENIED_RIGHTS
from gitfs.routes import CONFLICTS_DIR, GITFS_DIR

RECENT_CONFLICTS = 10  # shown one per line; the status file has up to 50, .gitfs/conflicts/ more
RECENT_RESCUES = 5  # likewise; the branches themselves stay in the clone


def _result(entry) -> str:
    if not entry:
        return "not yet"
    text = f"{entry['result']} at {entry['time']}"
    if entry["result"] == "refused":  # the server's words follow, a line each
        return text + f" by the server: {entry['reason']} (commit {entry['commit'][:10]})"
    return text + (f": {entry['error']}" if entry.get("error") else "")


def _refusal(state: dict) -> list[str]:
    """The server's own words about the push it refused, and what to do."""
    push = state.get("last_push") or {}
    if push.get("result") != "refused":
        return []
    lines = [f"server says: {line}" for line in push.get("server_says", [])]
    denied = _denied(push)
    if denied == DENIED_CREDENTIALS:
        lines.append("what to do:  the server refused this mount's credentials (a wrong, expired or revoked "
                     "password, token or key): give valid ones and mount again")
    elif denied == DENIED_EITHER:
        lines.append("what to do:  the server does not say whether it refused this mount's credentials (an "
                     "expired or revoked token or password: give valid ones and mount again) or their rights "
                     "(they may only read: ask for write access, or mount it with -o ro)")
    elif denied:
        lines.append("what to do:  this mount may not write to the remote: ask for write access, or mount it "
                     "with -o ro to follow it read-only")
    else:
        lines.append("what to do:  change or remove what the server names in current/ (a file over its size "
                     "limit: Git LFS or max_size); the next push sends everything not pushed as one commit")
    return lines


def _denied(push: dict) -> str:
    """What a server that refuses every write denies the mount (PushRefused.denied): "" for a
    refusal of the push alone; a daemon of an earlier version wrote writes_refused only."""
    return push.get("denied", DENIED_RIGHTS if push.get("writes_refused") else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _number(count: int) -> str:
    return f"{count:,}"


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


def _activity(state: dict) -> str:
    """What runs now: "committing 2,725 changes; pushing 1 commit: 1,024 of 2,731 objects
    sent (3.2 MB)"; empty when nothing does."""
    in_progress = state.get("in_progress") or {}
    parts = []
    if in_progress.get("committing"):
        parts.append(f"committing {_number(in_progress['committing'])} "
                     + ("change" if in_progress["committing"] == 1 else "changes"))
    push = in_progress.get("pushing")
    if push:
        text = f"pushing {_count(push['commits'], 'commit')}"
        if push.get("objects_total"):
            text += f": {_number(push['objects_sent'])} of {_number(push['objects_total'])} objects sent"
            if push.get("bytes_sent"):  # libgit2 counts none to a path remote
                text += f" ({_megabytes(push['bytes_sent'])})"
        else:
            text += " (building the pack)"
        parts.append(text)
    return "; ".join(parts)


def _summary(state: dict) -> str:
    pending = state.get("pending", {})
    not_pushed, not_committed = pending.get("commits_not_pushed", 0), pending.get("changes_not_committed", 0)
    failing = [what for what in ("fetch", "push")
               if (state.get(f"last_{what}") or {}).get("result") == "failed"]
    if state.get("read_only"):
        if "fetch" in failing:
            return "state:       read-only; fetch failing, retried (nothing is committed or pushed)"
        return "state:       read-only; follows the remote (nothing is committed or pushed)"
    activity = _activity(state)
    if activity:
        return f"state:       {activity}"
    push = state.get("last_push") or {}
    if push.get("result") == "refused":
        denied = _denied(push)
        refuses = ("refuses this mount's credentials" if denied == DENIED_CREDENTIALS else
                   "refuses writes from this mount" if denied else "refused the push")
        return f"state:       the server {refuses}; changes are kept locally and retried"
    if failing:
        return f"state:       {' and '.join(failing)} failing; changes are kept locally and retried"
    if not_pushed or not_committed:
        return "state:       syncing (changes waiting for the quiet period or the next push)"
    return "state:       in sync"


def format_status(state: dict, mount_point: str = "MOUNTPOINT") -> str:
    pending = state.get("pending", {})
    lines = [
        _summary(state),
        f"remote:      {state['remote']} (branch {state['branch']})",
        f"last fetch:  {_result(state.get('last_fetch'))}",
        f"last push:   {_result(state.get('last_push'))}",
        f"pending:     {_count(pending.get('commits_not_pushed', 0), 'commit')} not pushed, "
        f"{_count(pending.get('changes_not_committed', 0), 'change')} not committed"
        + (" (left for a read-write mount)" if state.get("read_only") else ""),
    ]
    lines += _refusal(state)
    error = state.get("last_error")
    refused = state.get("last_push") or {}
    if error and not (refused.get("result") == "refused" and refused.get("error") == error["message"]):
        lines.append(f"last error:  {error['message']} ({error['time']})")
    conflicts = state.get("conflicts", [])
    for conflict in conflicts[-RECENT_CONFLICTS:]:
        where = f"commit {conflict['remote_commit'][:10]}"
        if conflict.get("file"):
            where = os.path.join(mount_point, conflict["file"]) + f" (from {where})"
        lines.append(f"conflict:    kept the local {conflict['path']} at {conflict['time']}; "
                     f"the remote's version is in {where}")
    if len(conflicts) > RECENT_CONFLICTS:
        lines.append(f"             and {len(conflicts) - RECENT_CONFLICTS} earlier conflicts: "
                     f"{os.path.join(mount_point, GITFS_DIR, CONFLICTS_DIR)}/")
    rescues = state.get("rescues", [])
    for rescue in rescues[-RECENT_RESCUES:]:
        clone = f" of the clone {state['repo_path']}" if state.get("repo_path") else " of the clone"
        lines.append(f"rescue:      the remote's branch was rewritten at {rescue['time']}; the local history "
                     f"before it (commit {rescue['saved_commit'][:10]}) is kept on branch {rescue['branch']}{clone}")
    if len(rescues) > RECENT_RESCUES:
        lines.append(f"             and {len(rescues) - RECENT_RESCUES} earlier rescues "
                     "(git branch --list 'gitfs-rescue-*' in the clone)")
    for busy in state.get("writing", []):
        lines.append(f"writing:     /{busy['path']} is being written; committed as it stands in "
                     f"{busy['next_commit_in']:.0f} s at most, then again as long as it is written to")
    for failed in state.get("failed_writes", []):
        lines.append(f"not committed: /{failed['path']}: its last write failed ({failed['error']}) at "
                     f"{failed['time']}; it is committed once written whole, or gone once removed")
    unsaved = [failed["record"] for failed in state.get("failed_writes", []) if failed.get("record")]
    if unsaved:
        lines.append(f"not saved:   the list of files whose last write failed, on the clone's disk ({unsaved[0]}); "
                     "tried again at each change")
    for missing in state.get("lfs_missing", []):
        lines.append(f"LFS missing: {missing['path']} (object {missing['oid']}) at {missing['time']}: "
                     f"{missing['error']}")
    return "\n".join(lines)


def show_status(mount_point: str) -> int:
    path = os.path.join(mount_point, GITFS_DIR, "status")
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except FileNotFoundError:
        raise FatalError(f"{mount_point} is not a GitFS mount") from None
    except OSError as error:
        raise FatalError(f"cannot read {path}: {error.strerror}") from None
    print(format_status(state, mount_point))
    return 0
