"""The ordered route table: (regex, view kind), first match wins. Data, not code.

Every prefix ends at a path boundary, so `/current` never matches `/currentX`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import Pattern

BOUNDARY = r"(?=/|$)"
DAY = r"\d{4}-\d{2}-\d{2}"  # history/2026-12-03
COMMIT_FOLDER = r"\d{2}-\d{2}-\d{2}-[0-9a-f]{10}"  # history/DAY/14-32-12-eb18db93bc
STATUS_DIR = ".gitfs"  # MOUNTPOINT/.gitfs/status, not listed, opens by name


@dataclass(frozen=True)
class Route:
    pattern: Pattern[str]
    kind: str  # "status", "commit", "day", "history", "current" or "index"


def build_routes(*, current_path: str, history_path: str) -> list[Route]:
    history = re.escape(history_path)
    table = [
        (rf"^/{re.escape(STATUS_DIR)}{BOUNDARY}", "status"),
        (rf"^/{history}/(?P<day>{DAY})/(?P<name>{COMMIT_FOLDER}){BOUNDARY}", "commit"),
        (rf"^/{history}/(?P<day>[^/]+){BOUNDARY}", "day"),
        (rf"^/{history}{BOUNDARY}", "history"),
    ]
    if current_path:
        table.append((rf"^/{re.escape(current_path)}{BOUNDARY}", "current"))
        table.append((r"^", "index"))
    else:  # current_path=/ puts the working tree at the root
        table.append((r"^", "current"))
    return [Route(re.compile(pattern), kind) for pattern, kind in table]
