"""The ordered route table: (regex, the view it builds), first match wins. Data, not code.

Every prefix ends at a path boundary, so `/current` never matches `/currentX`. Each
route builds its view from the regex's named groups, through the mount's ViewFactory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from re import Pattern
from typing import Any, Protocol

BOUNDARY = r"(?=/|$)"
DAY = r"\d{4}-\d{2}-\d{2}"  # history/2026-12-03
COMMIT_FOLDER = r"\d{2}-\d{2}-\d{2}-[0-9a-f]{10}"  # history/DAY/14-32-12-eb18db93bc
COMMIT_ID = r"[0-9a-f]{7,40}"  # history/eb18db93bc4f: a link to the commit's folder
GITFS_DIR = ".gitfs"  # MOUNTPOINT/.gitfs/: status, metrics, conflicts/, versions/; not listed, opens by name
CONFLICTS_DIR = "conflicts"  # MOUNTPOINT/.gitfs/conflicts/<time>/PATH: the remote's versions that lost
VERSIONS_DIR = "versions"  # MOUNTPOINT/.gitfs/versions/PATH/<time>-<sha10>: every version of a file


class ViewFactory(Protocol):
    """Builds each kind of view; the mount gives every view what it needs."""

    def status(self) -> Any: ...  # MOUNTPOINT/.gitfs/ itself: the generated files
    def conflicts(self) -> Any: ...
    def versions(self) -> Any: ...
    def commit(self, day: str, name: str) -> Any: ...
    def commit_link(self, sha: str) -> Any: ...
    def day(self, day: str) -> Any: ...
    def history(self) -> Any: ...
    def current(self) -> Any: ...
    def index(self) -> Any: ...


@dataclass(frozen=True)
class Route:
    pattern: Pattern[str]
    name: str  # for logs and tests: "conflicts", "versions", "status", "commit", "commit_link", "day", "history", ...
    build: Callable[[dict[str, str]], Any]  # the regex's named groups -> the view


def build_routes(views: ViewFactory, *, current_path: str, history_path: str) -> list[Route]:
    history = re.escape(history_path)
    table: list[tuple[str, str, Callable[[dict[str, str]], Any]]] = [
        (rf"^/{re.escape(GITFS_DIR)}/{CONFLICTS_DIR}{BOUNDARY}", "conflicts", lambda groups: views.conflicts()),
        (rf"^/{re.escape(GITFS_DIR)}/{VERSIONS_DIR}{BOUNDARY}", "versions", lambda groups: views.versions()),
        (rf"^/{re.escape(GITFS_DIR)}{BOUNDARY}", "status", lambda groups: views.status()),
        (rf"^/{history}/(?P<day>{DAY})/(?P<name>{COMMIT_FOLDER}){BOUNDARY}", "commit",
         lambda groups: views.commit(groups["day"], groups["name"])),
        # Before the day route, which would take any name: a day always has dashes.
        (rf"^/{history}/(?P<sha>{COMMIT_ID}){BOUNDARY}", "commit_link",
         lambda groups: views.commit_link(groups["sha"])),
        (rf"^/{history}/(?P<day>[^/]+){BOUNDARY}", "day", lambda groups: views.day(groups["day"])),
        (rf"^/{history}{BOUNDARY}", "history", lambda groups: views.history()),
    ]
    if current_path:
        table.append((rf"^/{re.escape(current_path)}{BOUNDARY}", "current", lambda groups: views.current()))
        table.append((r"^", "index", lambda groups: views.index()))
    else:  # current_path=/ puts the working tree at the root
        table.append((r"^", "current", lambda groups: views.current()))
    return [Route(re.compile(pattern), name, build) for pattern, name, build in table]
