"""Three-way line merge of one text file, for "accept mine" (accept_mine.py).

libgit2's merge (merge_trees) already merges a file whose two sides changed different
lines; what it calls a conflict comes here, and is decided region by region:

- changed on one side only: that side;
- both sides inserted lines at one point, nothing of the base removed or changed (two
  people appending to a log, adding rows at the end of a table): the base, then the
  remote's new lines, then the local ones;
- both sides changed the same lines of the base differently: the local lines (accept
  mine); only this region is the local version's, every other change of the remote stays.

The regions come from Breezy's merge3 (three-way classification of two two-way diffs),
the two-way diffs from libgit2 (pygit2.Patch, git's own Myers diff, in C: a 10 MB file
in a fraction of a second, and the same answer git gives). Lines are bytes, split after
each "\\n": a file keeps its encoding and its line endings (CRLF stays CRLF). A last line
without "\\n" is merged as if it had one; whether the result ends with one is itself
merged (the local side's choice, unless only the remote changed it).

Never merged line by line (merge_lines answers None; the caller keeps the local file
whole): binary files by libgit2's rule (a NUL in the first 8,000 bytes, or over its size
limit), and three sides that do not read as one text encoding (UTF-8 beside Latin-1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, cast

import merge3
import pygit2

from gitfs.repo.compat import DiffOption

BINARY_PROBE = 8000  # bytes libgit2 (and git) look at for a NUL
MAX_MERGE_SIZE = 1023 * 1024 * 1024  # libgit2's GIT_XDIFF_MAX_SIZE: larger files are binary to it


@dataclass(frozen=True)
class LineMerge:
    content: bytes
    conflicts: int  # regions both sides changed differently, resolved with the local lines


def merge_lines(base: bytes, remote: bytes, local: bytes) -> Optional[LineMerge]:
    """The three-way merge of a text file, or None when it must not be merged line by line."""
    sides = (base, remote, local)
    if any(_is_binary(side) for side in sides) or not _one_encoding(sides):
        return None
    base_lines, remote_lines, local_lines = (_lines(side) for side in sides)
    # The lines all three share at the start and at the end are no one's change.
    head = _common_head(base_lines, remote_lines, local_lines)
    tail = _common_tail(base_lines, remote_lines, local_lines, head)
    middle = merge3.Merge3(base_lines[head:len(base_lines) - tail], remote_lines[head:len(remote_lines) - tail],
                           local_lines[head:len(local_lines) - tail], sequence_matcher=_GitDiff)
    merged = list(base_lines[:head])
    conflicts = 0
    for region in middle.merge_regions():
        kind = region[0]
        if kind == "unchanged":
            merged += middle.base[region[1]:region[2]]
        elif kind in ("a", "same"):
            merged += middle.a[region[1]:region[2]]
        elif kind == "b":
            merged += middle.b[region[1]:region[2]]
        else:  # "conflict": base, remote (a) and local (b) ranges
            base_start, base_end, remote_start, remote_end, local_start, local_end = cast(
                "tuple[int, int, int, int, int, int]", region[1:])
            if base_start == base_end:  # both only inserted here: keep both
                merged += middle.a[remote_start:remote_end]
            else:
                conflicts += 1
            merged += middle.b[local_start:local_end]
    merged += base_lines[len(base_lines) - tail:]
    content = b"".join(merged)
    ends = [side.endswith(b"\n") or not side for side in sides]
    if not (ends[1] if ends[2] == ends[0] else ends[2]) and content.endswith(b"\n"):
        content = content[:-2] if content.endswith(b"\r\n") else content[:-1]
    return LineMerge(content, conflicts)


def _is_binary(content: bytes) -> bool:
    return len(content) > MAX_MERGE_SIZE or b"\0" in content[:BINARY_PROBE]


def _one_encoding(sides: Sequence[bytes]) -> bool:
    """Whether the three sides read as one encoding: ASCII goes with any; UTF-8 with
    non-ASCII text does not go with a side that is not UTF-8 (Latin-1, Windows-1252)."""
    kinds = set()
    for side in sides:
        if side.isascii():
            continue
        try:
            side.decode("utf-8")
        except UnicodeDecodeError:
            kinds.add("8-bit")
        else:
            kinds.add("utf-8")
    return len(kinds) <= 1


def _lines(content: bytes) -> list[bytes]:
    """The lines of content, each with its ending; a last line without one gets the
    file's (CRLF if its first line has it), so that appending after it is an insertion."""
    lines = [line + b"\n" for line in content.split(b"\n")]
    last = lines.pop()  # what follows the last "\n", ended: a bare b"\n" if nothing does
    if last != b"\n":
        lines.append(last[:-1] + (b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"))
    return lines


def _common_head(*sides: list[bytes]) -> int:
    shortest = min(len(side) for side in sides)
    count = 0
    while count < shortest and sides[0][count] == sides[1][count] == sides[2][count]:
        count += 1
    return count


def _common_tail(base: list[bytes], remote: list[bytes], local: list[bytes], head: int) -> int:
    shortest = min(len(base), len(remote), len(local)) - head
    count = 0
    while count < shortest and base[-1 - count] == remote[-1 - count] == local[-1 - count]:
        count += 1
    return count


class _GitDiff:
    """What merge3 asks of difflib.SequenceMatcher (the blocks two line lists share),
    answered by libgit2's diff: git's own alignment, in C (difflib takes twice as long on
    a 10 MB table, and ignores lines as common as a document's blank ones)."""

    def __init__(self, _isjunk: object, old: Sequence[bytes], new: Sequence[bytes]):
        self.old = old
        self.new = new

    def get_matching_blocks(self) -> list[tuple[int, int, int]]:
        patch = pygit2.Patch.create_from(b"".join(self.old), b"".join(self.new), flag=DiffOption.FORCE_TEXT,
                                         context_lines=0, interhunk_lines=0)
        blocks = []
        old_at = new_at = 0  # where the lines not yet accounted for start
        for hunk in patch.hunks:
            # A hunk that removes nothing names the line it inserts after (1-based).
            old_start = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
            new_start = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
            if old_start > old_at:
                blocks.append((old_at, new_at, old_start - old_at))
            old_at, new_at = old_start + hunk.old_lines, new_start + hunk.new_lines
        if old_at < len(self.old):
            blocks.append((old_at, new_at, len(self.old) - old_at))
        blocks.append((len(self.old), len(self.new), 0))
        return blocks
