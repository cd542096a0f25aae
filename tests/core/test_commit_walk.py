"""The commit walks of history/ and .gitfs/versions/ against git's own answers, on
histories with merges, commits reachable along several paths, many commits in one
second and committer clocks that go backwards."""

from __future__ import annotations

import random
import subprocess

import pygit2
import pytest

from gitfs.repo.commits.commit_walk import first_parent_line, newest_first

SIGNATURE_NAME, SIGNATURE_EMAIL = "Walker", "walker@example.com"


def make_commit(git: pygit2.Repository, parents: list[pygit2.Oid], when: int, label: str) -> pygit2.Oid:
    blob = git.create_blob(label.encode())
    builder = git.TreeBuilder()
    builder.insert("f", blob, pygit2.GIT_FILEMODE_BLOB)
    signature = pygit2.Signature(SIGNATURE_NAME, SIGNATURE_EMAIL, when, 0)
    return git.create_commit(None, signature, signature, label, builder.write(), parents)


def rev_list(git: pygit2.Repository, tip: pygit2.Oid, *options: str) -> list[str]:
    result = subprocess.run(["git", "--git-dir", git.path, "rev-list", *options, str(tip)],
                            capture_output=True, text=True, check=True)
    return result.stdout.split()


def random_history(git: pygit2.Repository, rng: random.Random, count: int, *, backwards: bool = True) -> pygit2.Oid:
    """count commits on a few branches merged now and then; times mostly rising, many
    in the same second, some going backwards (a wrong clock) unless told not to."""
    heads = [make_commit(git, [], 1_000_000, "root")]
    when = 1_000_000
    for number in range(count):
        when += rng.choice([0, 0, 0, 1, 5, 60, -30 if backwards else 0])
        if len(heads) > 1 and rng.random() < 0.25:
            first, second = rng.sample(heads, 2)
            heads.remove(second)
            heads[heads.index(first)] = make_commit(git, [first, second], when, f"merge {number}")
        elif rng.random() < 0.15:
            heads.append(make_commit(git, [rng.choice(heads)], when, f"branch {number}"))
        else:
            at = rng.randrange(len(heads))
            heads[at] = make_commit(git, [heads[at]], when, f"commit {number}")
    tip = heads[0]
    for other in heads[1:]:
        when += rng.choice([0, 1])
        tip = make_commit(git, [tip, other], when, "merge all")
    return tip


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("backwards", [False, True], ids=["clocks right", "clocks going backwards"])
def test_newest_first_walks_what_git_walks_once_each_in_time_order_children_first(tmp_path, seed, backwards):
    git = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    tip = random_history(git, random.Random(seed), 300, backwards=backwards)
    walked = list(newest_first(git, tip))
    ids = [str(oid) for oid, _when in walked]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(rev_list(git, tip))
    assert all(git[oid].commit_time == when for oid, when in walked)
    if backwards:
        return  # a parent newer than its child comes when the walk finds it, not earlier
    times = [when for _oid, when in walked]
    assert times == sorted(times, reverse=True)
    position = {sha: at for at, sha in enumerate(ids)}
    same_second = 0
    for oid, when in walked:
        for parent in git[oid].parent_ids:
            if git[parent].commit_time == when:  # made in the same second: the child first
                assert position[str(oid)] < position[str(parent)]
                same_second += 1
    assert same_second > 50


def test_newest_first_on_a_diamond_in_one_second(tmp_path):
    git = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    root = make_commit(git, [], 100, "root")
    left = make_commit(git, [root], 100, "left")
    right = make_commit(git, [left], 100, "right")  # right descends from left
    merge = make_commit(git, [left, right], 100, "merge")  # merge's first parent is the older one
    assert [oid for oid, _when in newest_first(git, merge)] == [merge, right, left, root]


def test_first_parent_line_is_git_rev_list_first_parent(tmp_path):
    git = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    tip = random_history(git, random.Random(7), 200)
    line = [str(commit.id) for commit in first_parent_line(git, tip, None)]
    assert line == rev_list(git, tip, "--first-parent", "--topo-order")


def test_first_parent_line_stops_at_known_or_reads_the_whole_line(tmp_path):
    git = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    root = make_commit(git, [], 100, "root")
    middle = make_commit(git, [root], 200, "middle")
    tip = make_commit(git, [middle], 300, "tip")
    elsewhere = make_commit(git, [root], 250, "rewritten")
    assert [commit.id for commit in first_parent_line(git, tip, middle)] == [tip]
    assert [commit.id for commit in first_parent_line(git, tip, elsewhere)] == [tip, middle, root]
