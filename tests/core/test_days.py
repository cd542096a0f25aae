"""Layer 1: commits grouped by local day for history/ (gitfs/repo/history/days.py), on real repositories."""

import os

import pytest

from gitfs.repo.history.days import CommitDays, Day, day_and_name
from gitfs.repo.repository import Repository
from helpers import Remote, commit_time, git, history_folder


def days_of(remote):
    repo = Repository(str(remote.work), remote.branch)
    return repo, CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor)


@pytest.fixture
def dated(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "dated")
    remote.shas = [
        remote.commit({"f": "1"}, "one", date="2020-01-02T09:00:00+0000"),
        remote.commit({"f": "2"}, "two", date="2020-01-02T17:30:05+0000"),
        remote.commit({"f": "3"}, "three", date="2020-01-05T08:00:00+0000"),
        remote.commit({"f": "4"}, "four", date="2020-02-10T23:59:59+0000"),
    ]
    return remote


def test_days_newest_first_names_oldest_first(dated):
    _repo, days = days_of(dated)
    assert days.days() == ["2020-02-10", "2020-01-05", "2020-01-02"]
    one, two, three, four = (history_folder(dated, sha) for sha in dated.shas)
    assert days.names("2020-01-02") == [one[1], two[1]]
    assert days.names("2020-01-05") == [three[1]]
    assert days.names("2020-02-10") == [four[1]]
    assert one[1] == "09-00-00-" + dated.shas[0][:10]


def test_commit_lookup_needs_the_right_day_and_name(dated):
    _repo, days = days_of(dated)
    day, name = history_folder(dated, dated.shas[1])
    oid, when = days.commit(day, name)
    assert str(oid) == dated.shas[1]
    assert when == commit_time(dated, dated.shas[1])
    assert days.commit("2020-01-05", name) is None  # right name, wrong day
    assert days.commit(day, name[:-1] + ("0" if name[-1] != "0" else "1")) is None  # wrong sha
    assert days.commit(day, "00-00-00-" + dated.shas[1][:10]) is None  # wrong time
    assert days.commit("2019-01-01", name) is None


def test_unknown_day_has_no_names_and_no_span(dated):
    _repo, days = days_of(dated)
    assert days.names("2020-01-03") is None
    assert days.span("2020-01-03") is None
    assert days.names("junk") is None


def test_span_is_first_and_last_commit_time_of_the_day(dated):
    _repo, days = days_of(dated)
    assert days.span("2020-01-02") == (commit_time(dated, dated.shas[0]), commit_time(dated, dated.shas[1]))
    only = commit_time(dated, dated.shas[2])
    assert days.span("2020-01-05") == (only, only)


def test_days_are_local_days(tmp_path, local_timezone):
    # 02:00 UTC is 21:00 the evening before at UTC-5: the folder is that local day.
    local_timezone("XYZ+5")
    remote = Remote(tmp_path / "tz")
    sha = remote.commit({"f": "1"}, date="2020-01-02T02:00:00+0000")
    _repo, days = days_of(remote)
    assert days.days() == ["2020-01-01"]
    assert days.names("2020-01-01") == ["21-00-00-" + sha[:10]]
    assert day_and_name(sha, commit_time(remote, sha)) == ("2020-01-01", "21-00-00-" + sha[:10])


def test_committer_time_not_author_time(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "committer")
    env_date = "2020-06-01T12:00:00+0000"
    git("pull", "-q", cwd=remote.work, check=False)
    (remote.work / "f").write_text("x")
    git("add", "f", cwd=remote.work)
    env = dict(os.environ, GIT_AUTHOR_DATE="2001-01-01T00:00:00+0000", GIT_COMMITTER_DATE=env_date)
    git("commit", "-q", "-m", "m", cwd=remote.work, env=env)
    _repo, days = days_of(remote)
    assert days.days() == ["2020-06-01"]


def test_new_commits_appear_when_the_branch_moves(dated):
    _repo, days = days_of(dated)
    assert days.days()[0] == "2020-02-10"
    sha = dated.commit({"f": "5"}, "five", date="2020-02-10T23:59:59+0000")  # same second as "four"
    sha6 = dated.commit({"f": "6"}, "six", date="2020-03-01T00:00:01+0000")
    assert days.days() == ["2020-03-01", "2020-02-10", "2020-01-05", "2020-01-02"]
    assert days.names("2020-02-10") == [history_folder(dated, dated.shas[3])[1], history_folder(dated, sha)[1]]
    assert days.names("2020-03-01") == [history_folder(dated, sha6)[1]]


def test_rewritten_branch_is_reindexed(dated):
    _repo, days = days_of(dated)
    assert "2020-02-10" in days.days()
    git("reset", "-q", "--hard", dated.shas[1], cwd=dated.work)
    assert days.days() == ["2020-01-02"]
    assert days.commit(*history_folder(dated, dated.shas[3])) is None
    (dated.work / "g").write_text("new")
    git("add", "g", cwd=dated.work)
    env = dict(os.environ, GIT_COMMITTER_DATE="2020-01-07T10:00:00+0000")
    git("commit", "-q", "-m", "other line", cwd=dated.work, env=env)
    amended = git("rev-parse", "HEAD", cwd=dated.work).strip()
    assert days.days() == ["2020-01-07", "2020-01-02"]
    assert days.names("2020-01-07") == [history_folder(dated, amended)[1]]


def test_same_second_commits_are_listed_parents_first(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "same")
    shas = [remote.commit({"f": str(i)}, date="2020-01-02T09:00:00+0000") for i in range(4)]
    _repo, days = days_of(remote)
    assert days.names("2020-01-02") == ["09-00-00-" + sha[:10] for sha in shas]


def test_spans_entries_and_newest_time_follow_the_branch(dated):
    _repo, days = days_of(dated)
    one, two, three, four = (history_folder(dated, sha) for sha in dated.shas)
    times = [commit_time(dated, sha) for sha in dated.shas]
    assert days.spans() == [("2020-02-10", (times[3], times[3])), ("2020-01-05", (times[2], times[2])),
                            ("2020-01-02", (times[0], times[1]))]
    assert days.entries("2020-01-02") == [(one[1], times[0]), (two[1], times[1])]
    assert days.entries("2020-01-03") is None
    assert days.newest_time() == times[3]
    # The sorted days are cached: a new commit must still show at once.
    sha = dated.commit({"f": "5"}, "five", date="2020-03-01T12:00:00+0000")
    day, name = history_folder(dated, sha)
    assert days.days()[0] == day == "2020-03-01"
    assert days.spans()[0][0] == day and days.entries(day) == [(name, commit_time(dated, sha))]
    assert days.newest_time() == commit_time(dated, sha)


def test_a_commit_by_any_unique_prefix_of_its_id(dated):
    _repo, days = days_of(dated)
    for sha in dated.shas:
        for length in (7, 8, 12, 40):
            assert days.by_prefix(sha[:length]) == history_folder(dated, sha), (sha, length)
    assert days.by_prefix(dated.shas[0][:6]) is None  # too short to name a commit
    assert days.by_prefix("0" * 40) is None or "0" * 40 in dated.shas
    sha = dated.commit({"f": "5"}, "five", date="2020-03-01T00:00:01+0000")
    assert days.by_prefix(sha[:7]) == history_folder(dated, sha)  # a new commit is found at once
    git("reset", "-q", "--hard", dated.shas[1], cwd=dated.work)
    assert days.by_prefix(sha[:7]) is None  # no longer on the branch
    assert days.by_prefix(dated.shas[3]) is None


def test_an_ambiguous_prefix_names_no_commit():
    # Two real commits sharing 7 hex digits need ~16,000 commits: the index is fed oids directly.
    import pygit2
    shas = ["abcdef1" + "0" * 33, "abcdef1" + "f" * 33, "abcdef2" + "0" * 33]
    commits = [(pygit2.Oid(hex=sha), 1_600_000_000 + number) for number, sha in enumerate(shas)]
    days = CommitDays(lambda: commits[-1][0], lambda tip, hide: reversed(commits), lambda a, b: True)
    assert days.by_prefix("abcdef1") is None
    assert days.by_prefix("abcdef10") == day_and_name(shas[0], commits[0][1])
    assert days.by_prefix("abcdef1f") == day_and_name(shas[1], commits[1][1])
    assert days.by_prefix("abcdef2") == day_and_name(shas[2], commits[2][1])
    assert days.by_prefix("abcdef3") is None


def synthetic_walk(commits):
    """(oid, time) pairs oldest first from (raw id, time) pairs."""
    import pygit2
    return [(pygit2.Oid(raw=raw), when) for raw, when in commits]


def synthetic_days(pairs):
    """An index of (oid, time) pairs oldest first, walked newest first as the repository does."""
    return CommitDays(lambda: pairs[-1][0], lambda tip, hide: reversed(pairs), lambda a, b: True)


def test_the_index_keeps_no_python_object_per_commit(local_timezone):
    import tracemalloc
    local_timezone("UTC0")
    count = 20_000
    walk = synthetic_walk([(number.to_bytes(20, "big"), 1_600_000_000 + number * 300) for number in range(count)])
    tracemalloc.start()
    try:
        days = synthetic_days(walk)
        listed = sum(len(days.names(day)) for day in days.days())
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert listed == count
    assert held / count < 60  # 8 bytes of time and 20 of id per commit, plus a little per day


def test_a_day_walked_in_pieces_lists_its_commits_in_time_order(local_timezone):
    # Committer clocks disagree: a child may be older than its parent, so one day's commits
    # come in several runs of the walk. Oldest first by time; same second in walk order.
    local_timezone("UTC0")
    base = 1_600_000_000  # 2020-09-13 12:26:40 UTC
    times = [base, base + 10, base - 86400, base + 5, base + 5, base + 20]
    commits = [(bytes([number + 1]) * 20, when) for number, when in enumerate(times)]
    days = synthetic_days(synthetic_walk(commits))
    assert days.days() == ["2020-09-13", "2020-09-12"]
    hexes = [raw.hex()[:10] for raw, _when in commits]
    assert days.names("2020-09-13") == ["12-26-40-" + hexes[0], "12-26-45-" + hexes[3], "12-26-45-" + hexes[4],
                                        "12-26-50-" + hexes[1], "12-27-00-" + hexes[5]]
    oid, when = days.commit("2020-09-13", "12-26-45-" + hexes[4])
    assert oid.raw == commits[4][0] and when == base + 5
    assert days.by_prefix(commits[3][0].hex()[:8]) == ("2020-09-13", "12-26-45-" + hexes[3])


def test_a_day_grown_a_commit_at_a_time_is_the_day_indexed_at_once(local_timezone):
    # A branch moving forward all day: each move adds the new commits to the day's buffers.
    # Whatever the order they come in (same seconds, a committer's clock behind), the day
    # lists what one walk of the whole branch lists.
    import random
    from array import array

    local_timezone("UTC0")
    chooser = random.Random(48)
    base = 1_600_000_000 - 1_600_000_000 % 86400 + 3600
    grown = Day(array("q"), b"")
    every: list[tuple[int, bytes]] = []
    for number in range(400):
        when = base + number * 10 + chooser.choice([0, 0, 0, -10, -25, 3])  # some behind, some at once
        batch = [(when + extra, (number * 8 + extra).to_bytes(20, "big")) for extra in range(chooser.choice([1, 1, 2]))]
        grown = grown.merged(batch)
        every += batch
    whole = Day(array("q"), b"").merged(every)
    assert list(grown.times) == list(whole.times) == sorted(when for when, _raw in every)
    assert grown.ids == whole.ids
    assert grown.names() == whole.names() == Day(whole.times, whole.ids).names()


def test_a_commit_added_to_a_busy_day_costs_no_object_per_commit_the_day_had(local_timezone):
    import tracemalloc
    from array import array

    local_timezone("UTC0")
    count = 20_000
    base = 1_600_000_000 - 1_600_000_000 % 86400
    day = Day(array("q", [base + number for number in range(count)]),
              b"".join(number.to_bytes(20, "big") for number in range(count)))
    tracemalloc.start()
    try:
        grown = day.merged([(base + count, count.to_bytes(20, "big"))])
        _held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown is day  # grown in place: no copy of the buffers at every move
    assert len(grown) == count + 1 and grown.names()[-1] == day_and_name(grown.raw_id(count).hex(), base + count)[1]
    assert peak / count < 80  # the new day's buffers (48 bytes a commit) and little else
