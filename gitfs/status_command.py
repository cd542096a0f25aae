"""`gitfs status MOUNTPOINT`: the mount's sync status, for humans."""

from __future__ import annotations

import json
import os

from gitfs.errors import FatalError
from gitfs.routes import STATUS_DIR


def _result(entry) -> str:
    if not entry:
        return "not yet"
    text = f"{entry['result']} at {entry['time']}"
    return text + (f": {entry['error']}" if entry.get("error") else "")


def format_status(state: dict) -> str:
    pending = state.get("pending", {})
    lines = [
        f"remote:      {state['remote']} (branch {state['branch']})",
        f"last fetch:  {_result(state.get('last_fetch'))}",
        f"last push:   {_result(state.get('last_push'))}",
        f"pending:     {pending.get('commits_not_pushed', 0)} commits not pushed, "
        f"{pending.get('changes_not_committed', 0)} changes not committed",
    ]
    error = state.get("last_error")
    if error:
        lines.append(f"last error:  {error['message']} ({error['time']})")
    for conflict in state.get("conflicts", []):
        lines.append(f"conflict:    kept the local {conflict['path']}; the remote's version is in "
                     f"commit {conflict['remote_commit'][:10]} ({conflict['time']})")
    return "\n".join(lines)


def show_status(mount_point: str) -> int:
    path = os.path.join(mount_point, STATUS_DIR, "status")
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except FileNotFoundError:
        raise FatalError(f"{mount_point} is not a GitFS mount") from None
    except OSError as error:
        raise FatalError(f"cannot read {path}: {error.strerror}") from None
    print(format_status(state))
    return 0
