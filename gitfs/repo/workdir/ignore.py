"""GitFS's own ignore rules for the clone: the default rules for the litter of editors,
office suites and desktops, ignore_file and hard_ignore.

They go into the clone's `.git/info/exclude`, which git itself reads beside every
`.gitignore`: matching keeps git's real semantics (nesting, negation, anchoring),
the files stay fully usable in current/, and the rules are never committed or
pushed. In git a repository's own `.gitignore` outranks `.git/info/exclude`, so
`!keep-this~` in it commits that file despite the default `*~`.

libgit2 (1.9) keeps a negation only when it negates an earlier rule of the same
file, so it would drop the `.gitignore`'s `!keep-this~`. The section therefore
repeats, after the default rules, every negation of the working tree's `.gitignore`
files, anchored at the folder of its file: libgit2 then decides as git does, and
`git status` in the clone gives the same answer. (libgit2's in-memory rules,
git_ignore_add_rule, are no way around it: they outrank every `.gitignore`.)
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable

from gitfs.repo import beneath
from gitfs.repo.errors import SettingError

BEGIN = "# >>> gitfs: default rules, ignore_file and hard_ignore (rewritten by gitfs)"
END = "# <<< gitfs"
GITIGNORE = ".gitignore"

# The files programs write beside the documents people edit, never theirs to share.
# Anchor list: the Nextcloud desktop client's default sync-exclude.lst. Each entry:
# (pattern, what writes it, whether the test suite runs that program and sees the name:
# tests/mount/test_editors.py; the others are from the programs' documentation).
# The README prints this table (tests/cli/test_docs.py checks it).
DEFAULT_IGNORED: tuple[tuple[str, str, bool], ...] = (
    (".*.sw[a-px]", "vim's swap file `.notes.txt.swp` (then `.swo` ... `.swa`) and its `.swx` probe; "
     "nano's lock file `.notes.txt.swp`", True),
    ("*~", "the backup `notes.txt~` of vim, Emacs and nano --backup", True),
    ("\\#*#", "Emacs' auto-save file `#notes.txt#`", True),
    (".#*", "Emacs' lock, a symlink `.#notes.txt`", True),
    ("*.save", "nano: the unsaved buffer it writes when its terminal goes away, `notes.txt.save`", True),
    (".goutputstream-*", "gedit and every GIO program: the temporary file of a save", True),
    ("*.kate-swp", "Kate's and KWrite's swap file `.notes.txt.kate-swp`", False),
    (".~lock.*#", "LibreOffice's and OpenOffice's lock file `.~lock.report.odt#`", True),
    ("lu*.tmp", "LibreOffice's save file `lu17362ftgp.tmp`, written beside the document and renamed over it",
     True),
    ("~$*", "Microsoft Office's owner file `~$report.docx` on a shared folder", False),
    ("~*.tmp", "Microsoft Office's temporary files `~WRD0000.tmp`, `~WRL0001.tmp` of a save", False),
    (".DS_Store", "macOS Finder's folder settings", False),
    ("._*", "macOS: AppleDouble files (resource forks) on a foreign file system", False),
    ("Thumbs.db", "Windows Explorer's thumbnail cache", False),
    ("desktop.ini", "Windows Explorer's folder settings", False),
    (".Trash-*", "the freedesktop.org trash folder `.Trash-1000/` of a mounted file system", False),
)

# libfuse renames a file that is unlinked while still open to .fuse_hiddenNNNN and
# unlinks it when the last handle closes: never the user's file, never committed.
ALWAYS_IGNORED = (".fuse_hidden*",)


class IgnoreRules:
    """GitFS's section of the clone's `.git/info/exclude`, and the one writer of it."""

    def __init__(self, repo_path: str, *, default_ignore: bool = True, ignore_file: str = "",
                 hard_ignore: str = ""):
        self.repo_path = repo_path
        self.exclude = os.path.join(repo_path, ".git", "info", "exclude")
        self.defaults = [pattern for pattern, _writer, _tested in DEFAULT_IGNORED] if default_ignore else []
        self.extra: list[str] = []
        if ignore_file:
            try:
                with open(os.path.expanduser(ignore_file), encoding="utf-8") as handle:
                    self.extra.extend(line.rstrip("\n") for line in handle)
            except OSError as error:
                raise SettingError(f"option ignore_file: cannot read {ignore_file}: {error.strerror}") from None
        self.extra.extend(pattern for pattern in hard_ignore.split("|") if pattern.strip())
        self._negations: list[str] = []

    def install(self, gitignores: Iterable[str] = ()) -> None:
        """Write the section; gitignores: the `.gitignore` files of the working tree
        (relative paths) whose negations are to outrank the default rules."""
        self._negations = self._negations_of(gitignores) if self.defaults else []
        self._write()

    def refresh(self, gitignores: Iterable[str]) -> bool:
        """Rewrite the section if the negations of the `.gitignore` files changed; True if so."""
        if not self.defaults:
            return False
        negations = self._negations_of(gitignores)
        if negations == self._negations:
            return False
        self._negations = negations
        self._write()
        return True

    def _write(self) -> None:
        section = [BEGIN, *self.defaults, *self._negations, *self.extra, *ALWAYS_IGNORED, END]
        os.makedirs(os.path.dirname(self.exclude), exist_ok=True)
        kept = _without_our_section(self.exclude)
        # A new file, not one rewritten in place: libgit2 knows a changed rules file by
        # its inode, size and time, and a rewrite of the same size in the same tick
        # would keep the old rules in its cache.
        temporary = self.exclude + ".gitfs-new"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write("\n".join(kept + section) + "\n")
        os.replace(temporary, self.exclude)

    def _negations_of(self, gitignores: Iterable[str]) -> list[str]:
        negations: list[str] = []
        for path in sorted(set(gitignores)):
            for line in _read_rules(self.repo_path, path):
                if line.startswith("!"):
                    negations.append("!" + anchored(posixpath.dirname(path), line[1:]))
        return negations


def anchored(folder: str, pattern: str) -> str:
    """A pattern of the `.gitignore` in folder ("" for the root), as the same rule in
    `.git/info/exclude`: relative to the root, matching exactly what it matched there."""
    if not folder:
        return pattern
    body = pattern[:-1] if pattern.endswith("/") else pattern
    if "/" in body:  # anchored at its folder already (a leading or a middle slash)
        return f"/{folder}/{pattern.lstrip('/')}"
    return f"/{folder}/**/{pattern}"  # a bare name matches at any depth below its folder


def is_gitignore(path: str) -> bool:
    return posixpath.basename(path.strip("/")) == GITIGNORE


def _read_rules(repo_path: str, relative: str) -> list[str]:
    """The rule lines of a `.gitignore` of the working tree, reached one folder at a time
    and never through a link (git does not follow a linked `.gitignore` either); none
    if it is gone."""
    try:
        root = os.open(repo_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = beneath.open_beneath(root, relative, os.O_RDONLY | os.O_NONBLOCK)
        finally:
            os.close(root)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        text = handle.read(1024 * 1024).decode("utf-8", errors="replace")
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _without_our_section(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    starts = [index for index, line in enumerate(lines) if line.startswith("# >>> gitfs")]
    if not starts:
        return lines
    start = starts[0]
    end = lines.index(END, start) if END in lines[start:] else len(lines) - 1
    return lines[:start] + lines[end + 1:]
