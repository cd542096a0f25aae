"""Layer 1: the "accept mine" replay (gitfs/repo/merging/accept_mine.py) on real repositories.

The remote side is the Remote's other clone, which pushes; the local side is a second
plain clone whose commits are not pushed. After `git fetch` the two have diverged and
replay_local_commits must put the local commits on top of the remote's, linearly,
the local version of a file winning every conflict byte for byte.
"""

import os

import pygit2
import pytest

from gitfs.repo.merging.accept_mine import replay_local_commits
from gitfs.repo.repository import FILEMODE_EXEC, FILEMODE_LINK, Repository
from helpers import COMMITTER, Remote, clone_of, git, stage_files


class Local:
    """A plain clone acting as the mount's repository (commits made with git, never pushed)."""

    def __init__(self, remote: Remote, path):
        clone_of(remote, path)
        self.path = path
        self.remote = remote
        self.repo = Repository(str(path), remote.branch)

    def commit(self, files: dict, message: str) -> pygit2.Oid:
        stage_files(self.path, files)
        env = dict(os.environ, GIT_AUTHOR_NAME="Me", GIT_AUTHOR_EMAIL="me@example.com")
        git("commit", "-q", "-m", message, cwd=self.path, env=env)
        return self.repo.branch_tip()

    def replay(self):
        git("fetch", "-q", "origin", cwd=self.path)
        return replay_local_commits(self.repo, self.repo.branch_tip(), self.repo.remote_tip(), COMMITTER)

    def read(self, oid, path):
        return self.repo.git[oid].tree[path].data

    def mode(self, oid, path):
        return self.repo.git[oid].tree[path].filemode

    def has(self, oid, path):
        try:
            self.repo.git[oid].tree[path]
        except KeyError:
            return False
        return True

    def chain(self, tip):
        """[(subject line, parent count)] from tip down the first parents."""
        return [(c.message.splitlines()[0], len(c.parents)) for c in self.repo.git.walk(tip)]


@pytest.fixture
def local(remote, tmp_path):
    return Local(remote, tmp_path / "local")


def assert_linear_on_remote(local, result):
    remote_tip = local.repo.remote_tip()
    assert local.repo.is_ancestor(remote_tip, result.tip)
    assert all(parents <= 1 for _message, parents in local.chain(result.tip))


def test_local_commits_are_replayed_on_top_of_the_remote(local, remote):
    local.commit({"mine": "mine\n"}, "my first")
    local.commit({"mine2": "mine too\n"}, "my second")
    remote.commit({"theirs": "theirs\n"}, "their commit")
    result = local.replay()
    assert result.conflicts == []
    assert [m for m, _ in local.chain(result.tip)] == ["my second", "my first", "their commit",
                                                        "Initial test commit"]
    assert_linear_on_remote(local, result)
    assert local.read(result.tip, "mine") == b"mine\n"
    assert local.read(result.tip, "mine2") == b"mine too\n"
    assert local.read(result.tip, "theirs") == b"theirs\n"


def test_replayed_commits_keep_author_and_message(local, remote):
    local.commit({"mine": "mine\n"}, "Update /mine")
    remote.commit({"theirs": "theirs\n"}, "their commit")
    result = local.replay()
    commit = local.repo.git[result.tip]
    assert commit.message == "Update /mine\n"
    assert (commit.author.name, commit.author.email) == ("Me", "me@example.com")
    assert commit.committer.name == COMMITTER.name


def test_same_file_text_conflict_local_wins_byte_for_byte(local, remote):
    local.commit({"testing": "my version\n"}, "Update /testing")
    remote.commit({"testing": "their version\n"}, "their edit")
    result = local.replay()
    assert result.conflicts == ["testing"]
    assert local.read(result.tip, "testing") == b"my version\n"  # not b"b'my version\\n'"
    assert_linear_on_remote(local, result)
    assert [m for m, _ in local.chain(result.tip)][:2] == ["Update /testing", "their edit"]


def test_binary_conflict_local_wins_byte_for_byte(local, remote):
    remote.commit({"blob.bin": bytes(range(256))}, "a binary file")
    git("pull", "-q", cwd=local.path)
    mine = b"\x00\xff\x00mine" + bytes(range(255, -1, -1))
    local.commit({"blob.bin": mine}, "Update /blob.bin")
    remote.commit({"blob.bin": b"\x00theirs\xfe" * 10}, "their binary edit")
    result = local.replay()
    assert result.conflicts == ["blob.bin"]
    assert local.read(result.tip, "blob.bin") == mine


def test_non_overlapping_edits_of_one_file_keep_both(local, remote):
    lines = [f"line {n}\n" for n in range(1, 11)]
    remote.commit({"text": "".join(lines)}, "ten lines")
    git("pull", "-q", cwd=local.path)
    local.commit({"text": "".join(lines[:9] + ["line 10 (mine)\n"])}, "my edit")
    remote.commit({"text": "".join(["line 1 (theirs)\n"] + lines[1:])}, "their edit")
    result = local.replay()
    assert result.conflicts == []
    assert local.read(result.tip, "text") == "".join(["line 1 (theirs)\n"] + lines[1:9] +
                                                     ["line 10 (mine)\n"]).encode()


def test_local_delete_against_remote_change_deletes(local, remote):
    local.commit({"testing": None}, "Deleted /testing")
    remote.commit({"testing": "their edit\n"}, "their edit")
    result = local.replay()
    assert result.conflicts == ["testing"]
    assert not local.has(result.tip, "testing")
    assert local.has(result.tip, "me")
    assert_linear_on_remote(local, result)


def test_remote_delete_against_local_change_keeps_mine(local, remote):
    local.commit({"testing": "my edit\n"}, "Update /testing")
    remote.commit({"testing": None}, "their deletion")
    result = local.replay()
    assert result.conflicts == ["testing"]
    assert local.read(result.tip, "testing") == b"my edit\n"


def test_exec_bit_conflict_local_mode_wins(local, remote):
    os.chmod(local.path / "testing", 0o755)
    local.commit({"testing": "#!/bin/sh\nmine\n"}, "mine, executable")
    remote.commit({"testing": "theirs\n"}, "theirs")
    result = local.replay()
    assert local.read(result.tip, "testing") == b"#!/bin/sh\nmine\n"
    assert local.mode(result.tip, "testing") == FILEMODE_EXEC


def test_symlink_against_file_local_wins(local, remote):
    os.unlink(local.path / "testing")
    os.symlink("me", local.path / "testing")
    git("add", "testing", cwd=local.path)
    local.commit({}, "testing becomes a link")
    remote.commit({"testing": "their edit\n"}, "their edit")
    result = local.replay()
    assert local.mode(result.tip, "testing") == FILEMODE_LINK
    assert local.read(result.tip, "testing") == b"me"


def test_several_local_commits_on_one_file_end_with_the_last(local, remote):
    local.commit({"testing": "mine 1\n"}, "first")
    local.commit({"testing": "mine 2\n"}, "second")
    remote.commit({"testing": "theirs\n"}, "theirs")
    result = local.replay()
    assert local.read(result.tip, "testing") == b"mine 2\n"
    messages = [m for m, _ in local.chain(result.tip)]
    assert messages[:3] == ["second", "first", "theirs"]
    # Every local commit's content is kept in the history.
    first = local.repo.git[result.tip].parents[0]
    assert first.tree["testing"].data == b"mine 1\n"


def test_a_change_the_remote_already_has_is_dropped(local, remote):
    local.commit({"same": "same bytes\n"}, "mine")
    remote.commit({"same": "same bytes\n"}, "theirs, identical")
    result = local.replay()
    assert result.tip == local.repo.remote_tip()
    assert result.conflicts == []


def test_remote_behind_local_keeps_local(local, remote):
    tip = local.commit({"mine": "x\n"}, "mine")
    git("fetch", "-q", "origin", cwd=local.path)
    result = replay_local_commits(local.repo, tip, local.repo.remote_tip(), COMMITTER)
    assert result.tip == tip


def test_local_behind_remote_fast_forwards(local, remote):
    theirs = remote.commit({"theirs": "x\n"}, "theirs")
    result = local.replay()
    assert str(result.tip) == theirs


def test_local_commits_with_an_unrelated_remote_history(tmp_path):
    # The remote was rewritten (force-pushed): the local commits still land on its tip.
    remote = Remote(tmp_path / "r")
    remote.commit({"a": "a\n"}, "base")
    local = Local(remote, tmp_path / "local")
    local.commit({"mine": "mine\n"}, "mine")
    git("checkout", "-q", "--orphan", "new", cwd=remote.work)
    git("rm", "-q", "-rf", ".", cwd=remote.work)
    (remote.work / "b").write_text("b\n")
    git("add", "b", cwd=remote.work)
    git("commit", "-q", "-m", "rewritten", cwd=remote.work)
    git("push", "-q", "-f", "origin", f"new:{remote.branch}", cwd=remote.work)
    result = local.replay()
    assert local.repo.is_ancestor(local.repo.remote_tip(), result.tip)
    assert local.read(result.tip, "mine") == b"mine\n"
    assert local.read(result.tip, "b") == b"b\n"


# -- line by line: what both sides wrote in one text file --------------------------


def _numbered(count, changed=None):
    changed = changed or {}
    return "".join(changed.get(n, f"line {n}\n") for n in range(1, count + 1))


def test_appends_on_both_sides_keep_both_remote_first(local, remote):
    remote.commit({"log.txt": "first entry\n"}, "a log")
    git("pull", "-q", cwd=local.path)
    local.commit({"log.txt": "first entry\nentry written through the mount\n"}, "Update /log.txt")
    remote.commit({"log.txt": "first entry\nentry from the colleague\n"}, "their entry")
    result = local.replay()
    assert result.conflicts == []
    assert result.merged == ["log.txt"]
    assert local.read(result.tip, "log.txt") == (b"first entry\nentry from the colleague\n"
                                                 b"entry written through the mount\n")
    assert local.repo.git[result.tip].message == "Update /log.txt\n"  # nothing resolved against anyone
    assert_linear_on_remote(local, result)


def test_a_conflicting_line_costs_only_that_line(local, remote):
    remote.commit({"notes.txt": _numbered(50)}, "fifty lines")
    git("pull", "-q", cwd=local.path)
    local.commit({"notes.txt": _numbered(50, {10: "line 10 (mine)\n"})}, "Update /notes.txt")
    remote.commit({"notes.txt": _numbered(50, {10: "line 10 (theirs)\n", 45: "line 45 (theirs)\n"})}, "their edit")
    result = local.replay()
    assert result.conflicts == ["notes.txt"]
    assert local.read(result.tip, "notes.txt") == _numbered(50, {10: "line 10 (mine)\n",
                                                                  45: "line 45 (theirs)\n"}).encode()


def test_the_commit_message_names_the_file_and_the_colleagues_commit(local, remote):
    remote.commit({"notes.txt": "one\ntwo\n", "other": "x\n"}, "base")
    git("pull", "-q", cwd=local.path)
    local.commit({"notes.txt": "one (mine)\ntwo\n", "pic.bin": b"\0mine"}, "Update 2 items")
    theirs = remote.commit({"notes.txt": "one (theirs)\ntwo\n", "pic.bin": b"\0theirs"}, "their edit")
    remote.commit({"other": "y\n"}, "a later commit of theirs, elsewhere")
    result = local.replay()
    message = local.repo.git[result.tip].message
    subject, blank, heading, *named = message.splitlines()
    assert (subject, blank) == ("Update 2 items", "")
    assert heading == "Conflicts with a colleague's changes, resolved with this version:"
    assert sorted(named) == [f"  notes.txt (the lines both changed) against {theirs[:10]} by Other Person",
                             f"  pic.bin (the whole file) against {theirs[:10]} by Other Person"]


def test_insertions_at_one_point_in_the_middle_keep_both(local, remote):
    remote.commit({"list.md": "# To do\n\n- a\n- b\n\n# Done\n"}, "a list")
    git("pull", "-q", cwd=local.path)
    local.commit({"list.md": "# To do\n\n- a\n- b\n- mine\n\n# Done\n"}, "mine")
    remote.commit({"list.md": "# To do\n\n- a\n- b\n- theirs 1\n- theirs 2\n\n# Done\n"}, "theirs")
    result = local.replay()
    assert result.conflicts == []
    assert local.read(result.tip, "list.md") == b"# To do\n\n- a\n- b\n- theirs 1\n- theirs 2\n- mine\n\n# Done\n"


def test_crlf_file_appends_stay_crlf(local, remote):
    remote.commit({"rows.csv": b"id,name\r\n1,a\r\n"}, "a table")
    git("pull", "-q", cwd=local.path)
    local.commit({"rows.csv": b"id,name\r\n1,a\r\n3,mine\r\n"}, "mine")
    remote.commit({"rows.csv": b"id,name\r\n1,a\r\n2,theirs\r\n"}, "theirs")
    result = local.replay()
    assert local.read(result.tip, "rows.csv") == b"id,name\r\n1,a\r\n2,theirs\r\n3,mine\r\n"


def test_binary_files_are_never_merged_line_by_line(local, remote):
    remote.commit({"data.bin": b"\0head\nbase\n"}, "binary")
    git("pull", "-q", cwd=local.path)
    local.commit({"data.bin": b"\0head\nbase\nmine\n"}, "mine")
    remote.commit({"data.bin": b"\0head\nbase\ntheirs\n"}, "theirs")
    result = local.replay()
    assert result.conflicts == ["data.bin"]
    assert local.read(result.tip, "data.bin") == b"\0head\nbase\nmine\n"


@pytest.mark.parametrize("attribute", ["-merge", "merge=binary"])
def test_a_path_marked_not_to_merge_keeps_the_local_file_whole(local, remote, attribute):
    remote.commit({".gitattributes": f"*.txt {attribute}\n", "log.txt": "one\n"}, "attributes")
    git("pull", "-q", cwd=local.path)
    local.commit({"log.txt": "one\nmine\n"}, "mine")
    remote.commit({"log.txt": "one\ntheirs\n"}, "theirs")
    result = local.replay()
    assert result.conflicts == ["log.txt"]
    assert local.read(result.tip, "log.txt") == b"one\nmine\n"


def test_merge_union_keeps_working(local, remote):
    remote.commit({".gitattributes": "*.txt merge=union\n", "log.txt": "one\n"}, "attributes")
    git("pull", "-q", cwd=local.path)
    local.commit({"log.txt": "one (mine)\n"}, "mine")
    remote.commit({"log.txt": "one (theirs)\n"}, "theirs")
    result = local.replay()
    assert result.conflicts == []
    assert local.read(result.tip, "log.txt") == b"one (theirs)\none (mine)\n"


def test_a_file_added_on_both_sides_keeps_the_local_one(local, remote):
    local.commit({"new.txt": "mine\n"}, "mine")
    remote.commit({"new.txt": "theirs\n"}, "theirs")
    result = local.replay()
    assert result.conflicts == ["new.txt"]
    assert local.read(result.tip, "new.txt") == b"mine\n"
