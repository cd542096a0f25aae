"""Layer 1: the other names of hard-linked files in a working tree (gitfs/repo/workdir/hard_links.py)."""

import os

from gitfs.repo.workdir.hard_links import other_names


def test_the_other_names_of_a_file_with_several_links_are_found(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "a").write_text("shared\n")
    os.link(tmp_path / "a", tmp_path / "deep" / "er" / "b")
    os.link(tmp_path / "a", tmp_path / ".git" / "not-a-name")  # the git folder is no part of the tree
    (tmp_path / "single").write_text("alone\n")
    os.symlink("a", tmp_path / "link")
    assert other_names(str(tmp_path), ["/a"]) == {"deep/er/b"}
    assert other_names(str(tmp_path), ["deep/er/b"]) == {"a"}
    assert other_names(str(tmp_path), ["a", "deep/er/b"]) == set()
    assert other_names(str(tmp_path), ["single", "link", "missing", "deep"]) == set()


def test_a_file_named_by_its_inode_is_found_after_the_name_written_through_is_gone(tmp_path):
    (tmp_path / "a").write_text("shared\n")
    os.link(tmp_path / "a", tmp_path / "b")
    status = os.stat(tmp_path / "a")
    os.unlink(tmp_path / "a")
    assert other_names(str(tmp_path), ["a"], [(status.st_dev, status.st_ino)]) == {"b"}


def test_names_past_one_system_calls_path_length_are_found(tmp_path):
    """Folders 20 deep of 250-byte names: the second name is 5,000 bytes from the root."""
    (tmp_path / "a").write_text("shared\n")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(20):
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.link(tmp_path / "a", "b", dst_dir_fd=fd)
    finally:
        os.close(fd)
    deep = "/".join(["d" * 250] * 20) + "/b"
    assert len(os.fsencode(str(tmp_path / deep))) > 4096
    assert other_names(str(tmp_path), ["a"]) == {deep}


def test_a_link_to_a_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "tree").mkdir(parents=True)
    (outside / "tree" / "a").write_text("shared\n")
    os.link(outside / "tree" / "a", outside / "elsewhere")
    os.symlink(outside, outside / "tree" / "up")
    assert other_names(str(outside / "tree"), ["a"]) == set()
