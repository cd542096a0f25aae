"""Layer 1: the record of paths the disk cannot hold (gitfs/repo/objects/skipped.py) survives restarts."""

from __future__ import annotations

from gitfs.repo.objects.skipped import SkippedPaths


def test_skipped_paths_are_kept_across_instances(tmp_path):
    record = tmp_path / "skipped"
    skipped = SkippedPaths(str(record))
    assert not skipped and skipped.inside("") == []
    odd = "d/" + "n" * 300 + "\n"  # a newline is a valid byte in a git path
    skipped.add(odd)
    skipped.add("d/e/x")
    skipped.add("other")
    again = SkippedPaths(str(record))
    assert odd in again and again.inside("d") == sorted([odd, "d/e/x"]) and again.inside("d/e/x") == ["d/e/x"]
    assert again.inside("do") == [] and len(again.inside("")) == 3
    again.discard(["d/e/x", "never"])
    assert SkippedPaths(str(record)).inside("") == sorted([odd, "other"])
