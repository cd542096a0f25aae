"""The paths of the branch that cannot exist on this disk, kept in the commits.

Git has no limit on a name's length or its bytes; a disk has (a name over 255
bytes, bytes its filesystem refuses). Such a path the remote holds is left out
of the working tree (worktree.py records it here) but stays in the index, so
that staging, which makes the index match the disk, never takes it for a file
the user deleted (staging.py keeps what is recorded here). The record lives in
the clone's .git (one file, NUL-separated paths) and so survives restarts; only
the sync worker reads and writes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


class SkippedPaths:
    def __init__(self, file: str):
        self._file = file
        self._paths: set[str] | None = None  # read on first use

    def _loaded(self) -> set[str]:
        if self._paths is None:
            try:
                with open(self._file, "rb") as handle:
                    self._paths = {os.fsdecode(path) for path in handle.read().split(b"\0") if path}
            except FileNotFoundError:
                self._paths = set()
        return self._paths

    def __contains__(self, path: str) -> bool:
        return path in self._loaded()

    def __bool__(self) -> bool:
        return bool(self._loaded())

    def inside(self, folder: str) -> list[str]:
        """The skipped paths at `folder` or below it ("" for every one)."""
        return sorted(path for path in self._loaded()
                      if not folder or path == folder or path.startswith(folder + "/"))

    def add(self, path: str) -> None:
        if path not in self._loaded():
            self._loaded().add(path)
            self._save()

    def discard(self, paths: Iterable[str]) -> None:
        paths = self._loaded() & set(paths)
        if paths:
            self._loaded().difference_update(paths)
            self._save()

    def _save(self) -> None:
        temporary = self._file + ".new"
        with open(temporary, "wb") as handle:
            handle.write(b"".join(os.fsencode(path) + b"\0" for path in sorted(self._loaded())))
        os.replace(temporary, self._file)
