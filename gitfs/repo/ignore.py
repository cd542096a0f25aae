"""Extra ignore rules (ignore_file, hard_ignore) for the clone.

They go into the clone's `.git/info/exclude`, which git itself reads beside
every `.gitignore`: matching keeps git's real semantics (nesting, negation,
anchoring), and the rules are never committed or pushed.
"""

from __future__ import annotations

import os

from gitfs.repo.errors import SettingError

BEGIN = "# >>> gitfs: ignore_file and hard_ignore (rewritten at every mount)"
END = "# <<< gitfs"
# libfuse renames a file that is unlinked while still open to .fuse_hiddenNNNN and
# unlinks it when the last handle closes: never the user's file, never committed.
ALWAYS_IGNORED = [".fuse_hidden*"]


def install_extra_ignores(repo_path: str, ignore_file: str, hard_ignore: str) -> None:
    rules: list[str] = []
    if ignore_file:
        try:
            with open(os.path.expanduser(ignore_file), encoding="utf-8") as handle:
                rules.extend(line.rstrip("\n") for line in handle)
        except OSError as error:
            raise SettingError(f"option ignore_file: cannot read {ignore_file}: {error.strerror}") from None
    rules.extend(pattern for pattern in hard_ignore.split("|") if pattern.strip())
    rules.extend(ALWAYS_IGNORED)
    exclude = os.path.join(repo_path, ".git", "info", "exclude")
    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    kept = _without_our_section(exclude)
    section = [BEGIN, *rules, END]
    with open(exclude, "w", encoding="utf-8") as handle:
        handle.write("\n".join(kept + section) + "\n")


def _without_our_section(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    if BEGIN not in lines:
        return lines
    start = lines.index(BEGIN)
    end = lines.index(END, start) if END in lines[start:] else len(lines) - 1
    return lines[:start] + lines[end + 1:]
