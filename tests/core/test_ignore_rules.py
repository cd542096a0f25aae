"""Layer 1: GitFS's ignore rules in the clone (gitfs/repo/workdir/ignore.py), on real repositories.

What libgit2 decides (the sync worker stages through it) is compared with what git
itself decides (`git check-ignore`) on the same clone: the default rules keep git's
precedence, so a repository's own `.gitignore` can bring a file back.
"""

import ctypes
import os
import re
import subprocess
import sys

import pygit2
import pytest

from gitfs.repo.errors import SettingError
from gitfs.repo.workdir.ignore import DEFAULT_IGNORED, IgnoreRules, anchored
from helpers import git

# Names each program writes (seen with the program, see tests/mount/test_editors.py).
WRITTEN_BY_PROGRAMS = [
    ".notes.txt.swp", ".notes.txt.swo", ".notes.txt.swa", ".notes.txt.swx", "docs/.plan.md.swp",
    "notes.txt~", "notes.txt.~1~", "#notes.txt#", ".#notes.txt", "notes.txt.save",
    ".goutputstream-ABC123", ".notes.txt.kate-swp", ".~lock.report.odt#", "docs/lu17362ftgp.tmp",
    "~$report.docx", "~WRL0001.tmp", "~WRD0000.tmp", ".DS_Store", "docs/._report.odt", "Thumbs.db",
    "desktop.ini", ".Trash-1000/files/old.txt",
]
# Names a person may well give their own files: committed as before.
PEOPLE_S_NAMES = [
    "notes~draft.txt", "lock.txt", "report.odt", "notes.txt", "#hashtag.txt", "notes#", ".swp", "a.swp.txt",
    "lunch.txt", "lu.tmp.txt", "~home.txt", "$report.docx", "DS_Store", "Trash-1000", ".hidden", "save.txt",
    ".notes.txt.swpx", "docs/.plan.md.sw",
]


@pytest.fixture
def new_repo(tmp_path):
    """A new repository (no remote), standing for the mount's clone."""
    path = tmp_path / "clone"
    git("init", "-q", str(path))
    return path


def libgit2_ignored(new_repo, paths):
    repo = pygit2.Repository(str(new_repo))
    return {path for path in paths if repo.path_is_ignored(path)}


def git_ignored(new_repo, paths):
    """What git itself says (check-ignore -q exits 0 for an ignored path); --no-index: untracked or not."""
    result = subprocess.run(["git", "-C", str(new_repo), "check-ignore", "--no-index", "--stdin"],
                            input="\n".join(paths) + "\n", capture_output=True, text=True)
    assert result.returncode in (0, 1), result.stderr
    return set(result.stdout.splitlines())


def test_the_default_rules_ignore_what_programs_write_and_nothing_people_name(new_repo):
    IgnoreRules(str(new_repo)).install()
    names = WRITTEN_BY_PROGRAMS + PEOPLE_S_NAMES
    assert libgit2_ignored(new_repo, names) == set(WRITTEN_BY_PROGRAMS)
    assert git_ignored(new_repo, names) == set(WRITTEN_BY_PROGRAMS)


def test_every_default_pattern_matches_a_name_a_program_writes(new_repo):
    for pattern, _writer, _tested in DEFAULT_IGNORED:
        IgnoreRules(str(new_repo), default_ignore=False, hard_ignore=pattern).install()
        assert libgit2_ignored(new_repo, WRITTEN_BY_PROGRAMS), pattern


def test_a_gitignore_negation_brings_a_file_back_as_git_does(new_repo):
    (new_repo / ".gitignore").write_text("!keep-this~\n")
    (new_repo / "sub").mkdir()
    (new_repo / "sub/.gitignore").write_text("# a comment\n!kept.save\n!/top~\n!deep/*.kate-swp\n")
    rules = IgnoreRules(str(new_repo))
    rules.install([".gitignore", "sub/.gitignore"])
    paths = ["keep-this~", "sub/keep-this~", "other~", "sub/kept.save", "sub/x/kept.save", "kept.save",
             "sub/top~", "sub/x/top~", "sub/deep/.a.kate-swp", "sub/deeper/.a.kate-swp", "sub/deep/x/.a.kate-swp"]
    expected = {"other~", "kept.save", "sub/x/top~", "sub/deeper/.a.kate-swp", "sub/deep/x/.a.kate-swp"}
    assert git_ignored(new_repo, paths) == expected
    assert libgit2_ignored(new_repo, paths) == expected


def test_without_the_negations_libgit2_would_not_follow_git(new_repo):
    """Why the section repeats the negations: libgit2 drops a .gitignore's negation of a
    rule of .git/info/exclude, where git keeps it."""
    (new_repo / ".gitignore").write_text("!keep-this~\n")
    IgnoreRules(str(new_repo)).install()  # told of no .gitignore
    assert git_ignored(new_repo, ["keep-this~"]) == set()
    assert libgit2_ignored(new_repo, ["keep-this~"]) == {"keep-this~"}


def test_refresh_follows_a_changed_gitignore(new_repo):
    rules = IgnoreRules(str(new_repo))
    rules.install([])
    assert libgit2_ignored(new_repo, ["keep-this~"]) == {"keep-this~"}
    (new_repo / ".gitignore").write_text("!keep-this~\n")
    assert rules.refresh([".gitignore"]) is True
    assert libgit2_ignored(new_repo, ["keep-this~"]) == set()
    assert rules.refresh([".gitignore"]) is False  # nothing new: the file is not rewritten
    (new_repo / ".gitignore").unlink()
    assert rules.refresh([".gitignore"]) is True
    assert libgit2_ignored(new_repo, ["keep-this~"]) == {"keep-this~"}


def test_default_ignore_false_leaves_only_the_options_rules(new_repo, tmp_path):
    extra = tmp_path / "extra"
    extra.write_text("*.log\n")
    IgnoreRules(str(new_repo), default_ignore=False, ignore_file=str(extra), hard_ignore="*.bak").install()
    paths = WRITTEN_BY_PROGRAMS + ["debug.log", "old.bak", ".fuse_hidden0001"]
    assert libgit2_ignored(new_repo, paths) == {"debug.log", "old.bak", ".fuse_hidden0001"}


def test_ignore_file_and_hard_ignore_work_beside_the_defaults(new_repo, tmp_path):
    extra = tmp_path / "extra"
    extra.write_text("*.log\n!important.log\n")
    IgnoreRules(str(new_repo), ignore_file=str(extra), hard_ignore="*.bak|cache/").install()
    paths = ["debug.log", "important.log", "old.bak", "cache/x", "notes.txt~", "notes.txt"]
    assert libgit2_ignored(new_repo, paths) == {"debug.log", "old.bak", "cache/x", "notes.txt~"}


def test_an_unreadable_ignore_file_is_a_setting_error(new_repo, tmp_path):
    with pytest.raises(SettingError, match="ignore_file"):
        IgnoreRules(str(new_repo), ignore_file=str(tmp_path / "missing"))


def test_the_section_replaces_an_earlier_one_and_keeps_the_user_s_lines(new_repo):
    exclude = new_repo / ".git/info/exclude"
    exclude.write_text("# mine\n*.mine\n# >>> gitfs: ignore_file and hard_ignore (rewritten at every mount)\n"
                       "*.old\n# <<< gitfs\n")
    IgnoreRules(str(new_repo), hard_ignore="*.new").install()
    text = exclude.read_text()
    assert text.startswith("# mine\n*.mine\n# >>> gitfs")
    assert "*.old" not in text and "*.new" in text and text.count("# >>> gitfs") == 1
    IgnoreRules(str(new_repo), hard_ignore="*.new").install()
    assert exclude.read_text() == text


def test_a_linked_gitignore_is_not_read(new_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("!keep-this~\n")
    os.symlink(outside, new_repo / ".gitignore")
    (new_repo / "sub").mkdir()
    os.symlink(tmp_path, new_repo / "linked")
    IgnoreRules(str(new_repo)).install([".gitignore", "linked/outside"])
    assert libgit2_ignored(new_repo, ["keep-this~"]) == {"keep-this~"}


@pytest.mark.parametrize("folder, pattern, expected", [
    ("", "keep~", "keep~"),
    ("sub", "keep~", "/sub/**/keep~"),
    ("sub", "/keep~", "/sub/keep~"),
    ("a/b", "x/keep~", "/a/b/x/keep~"),
    ("sub", "build/", "/sub/**/build/"),
    ("sub", "x/build/", "/sub/x/build/"),
])
def test_anchored(folder, pattern, expected):
    assert anchored(folder, pattern) == expected


def _loaded_libgit2():
    """ctypes' handle on the libgit2 pygit2 runs on (pygit2 binds no git_ignore_add_rule)."""
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if re.search(r"/libgit2[-.][^/]*\.so", path):
            return ctypes.CDLL(path)
    return None


def test_libgit2_in_memory_rules_would_outrank_the_repository_s_gitignore(new_repo):
    """Why the default rules are not libgit2's in-memory rules (git_ignore_add_rule): those
    are looked up before every .gitignore, so no `!keep-this~` could bring a file back."""
    library = _loaded_libgit2()
    if library is None or not hasattr(library, "git_ignore_add_rule"):
        pytest.skip("libgit2's shared library is not found")
    (new_repo / ".gitignore").write_text("*~\n!keep-this~\n")
    repo = pygit2.Repository(str(new_repo))
    assert not repo.path_is_ignored("keep-this~")
    pointer = ctypes.c_void_p(int.from_bytes(repo._pointer, sys.byteorder))
    assert library.git_ignore_add_rule(pointer, b"keep-this~\n") == 0
    assert repo.path_is_ignored("keep-this~")  # the .gitignore's negation lost
