"""Walking a branch's commits from its tip, each commit read once.

libgit2's revwalk reads and parses every commit for its own queue, and pygit2's
Walker then looks each one up again to hand it out: two inflates per commit (GitFS
keeps no commits in libgit2's object cache). These walks look each commit up once,
through the calling thread's handle, and follow its parent ids themselves: on a
history of 300,000 commits, 2.4 s instead of 4.0 s.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import Optional, cast

import pygit2

_Found = tuple[int, int, pygit2.Oid, list[pygit2.Oid]]  # -commit time, order of discovery, id, parent ids


def newest_first(git: pygit2.Repository, tip: pygit2.Oid) -> Iterator[tuple[pygit2.Oid, int]]:
    """(id, committer time) of every commit reachable from tip, once each: newest first by
    committer time, and among the commits of one second, each before its parents (so that
    reversed, a second's commits come parents first, as they were made). Where a clock
    went backwards (a parent newer than its child), the parent comes when the walk finds
    it, after that child, and its second's commits may come in two groups."""
    def found(oid: pygit2.Oid, order: int) -> _Found:
        commit = cast(pygit2.Commit, git[oid])
        return -commit.commit_time, order, oid, commit.parent_ids

    entry: Optional[_Found] = found(tip, 0)
    queue: list[_Found] = []  # (-time, order of discovery, ...): the newest first, then the first found
    discovered = 0
    # Until the first merge the walk is a chain and no commit can come twice: a linear
    # history is walked without a set of every id, and without the queue.
    seen: Optional[set[bytes]] = None
    second: list[tuple[pygit2.Oid, list[pygit2.Oid]]] = []  # the commits of one second, as found
    second_time = 0
    while entry is not None:
        negative_time, _order, oid, parents = entry
        if seen is None and len(parents) > 1:
            seen = {parent.raw for parent in parents}
            fresh = parents
        elif seen is None:
            fresh = parents
        else:
            fresh = [parent for parent in parents if parent.raw not in seen]
            seen.update(parent.raw for parent in fresh)
        if second and -negative_time != second_time:
            if len(second) == 1:
                yield second[0][0], second_time
            else:
                yield from _children_first(second, second_time)
            second = []
        second_time = -negative_time
        second.append((oid, parents))
        if len(fresh) == 1 and not queue:
            discovered += 1
            entry = found(fresh[0], discovered)
            continue
        for parent in fresh:
            discovered += 1
            heapq.heappush(queue, found(parent, discovered))
        entry = heapq.heappop(queue) if queue else None
    if len(second) == 1:
        yield second[0][0], second_time
    else:
        yield from _children_first(second, second_time)


def _children_first(commits: list[tuple[pygit2.Oid, list[pygit2.Oid]]],
                    when: int) -> Iterator[tuple[pygit2.Oid, int]]:
    """One second's commits, each after its children among them (a merge and what it
    merged, a replay of several commits: all made within one second)."""
    by_raw = {oid.raw: (oid, parents) for oid, parents in commits}
    children_left: dict[bytes, int] = {}
    for _oid, parents in commits:
        for parent in parents:
            if parent.raw in by_raw:
                children_left[parent.raw] = children_left.get(parent.raw, 0) + 1
    ready = deque(entry for entry in commits if entry[0].raw not in children_left)
    while ready:
        oid, parents = ready.popleft()
        yield oid, when
        for parent in parents:
            left = children_left.get(parent.raw)
            if left == 1:
                del children_left[parent.raw]
                ready.append(by_raw[parent.raw])
            elif left is not None:
                children_left[parent.raw] = left - 1


def first_parent_line(git: pygit2.Repository, tip: pygit2.Oid,
                      known: Optional[pygit2.Oid]) -> Iterator[pygit2.Commit]:
    """The commits of tip's first-parent line, newest first, down to `known` (excluded)
    or, when `known` is None or not on the line, down to the line's root."""
    oid: Optional[pygit2.Oid] = tip
    while oid is not None and oid != known:
        commit = cast(pygit2.Commit, git[oid])
        yield commit
        parents = commit.parent_ids
        oid = parents[0] if parents else None
