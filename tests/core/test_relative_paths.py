"""The folders above a path in a tree: what the kernel's cache and a moved remote's cleanup walk."""

import pytest

from gitfs.repo.relative_paths import folders_above


@pytest.mark.parametrize(("path", "folders"), [
    ("a/b/c", ["a/b", "a", ""]),
    ("refs/gitfs/pushing", ["refs/gitfs", "refs", ""]),
    ("top.txt", [""]),
    ("/a/b/", ["a", ""]),
])
def test_folders_above_a_path_come_deepest_first_down_to_the_root(path, folders):
    assert folders_above(path) == folders


def test_sorting_by_length_puts_every_folder_before_those_above_it():
    found = {folder for path in ("x/yy/z", "x/a", "logs/refs/heads/main") for folder in folders_above(path)}
    ordered = sorted(found, key=len, reverse=True)
    assert ordered[-1] == ""
    for index, folder in enumerate(ordered[:-1]):
        assert not set(folders_above(folder)) & set(ordered[:index])
