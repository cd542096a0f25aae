"""Layer 1: what the kernel is told of current/ when the remote's changes land
(cache_policy.WorktreeForgetter), and its recheck of what the kernel shows against a real
working tree."""

import os

from gitfs.cache_policy import WorktreeForgetter


class Kernel:
    """fuse_binding.KernelCache as the forgetter uses it: `shown` maps a mount path to the
    lstat it answers (the kernel's cached attributes); what it is told is recorded."""

    active = True

    def __init__(self, shown):
        self.shown = shown
        self.invalidated: list[list[str]] = []
        self.forgotten: list[str] = []

    def node_ids(self, paths):
        return dict.fromkeys(paths, 1)

    def forget_entries(self, parents, removed):
        self.forgotten.extend(removed)

    def invalidate(self, paths):
        self.invalidated.append(list(paths))

    def invalidate_while_serving(self, paths):
        pass

    def attributes(self, path):
        return self.shown.get(path)


def test_names_go_only_for_what_was_removed_and_attributes_for_every_written_path_and_folder(tmp_path):
    kernel = Kernel({})
    WorktreeForgetter(kernel, "/current", str(tmp_path)).changed({"a/b.txt", "gone.txt"}, ["gone.txt"])
    assert kernel.forgotten == ["/current/gone.txt"]
    assert kernel.invalidated == [["/current", "/current/a", "/current/a/b.txt", "/current/gone.txt"]]


def test_under_the_freeze_only_attributes_and_pages_are_told_never_a_name(tmp_path):
    kernel = Kernel({})
    WorktreeForgetter(kernel, "", str(tmp_path)).rewritten({"a/b.txt", "gone.txt"})
    assert kernel.forgotten == []
    assert kernel.invalidated == [["/", "/a", "/a/b.txt", "/gone.txt"]]


def test_a_file_the_kernel_shows_as_it_was_is_told_again_once(tmp_path):
    (tmp_path / "theirs.txt").write_text("line 1\nline 2\n")
    (tmp_path / "old.txt").write_text("line 1\n")
    (tmp_path / "same.txt").write_text("same\n")
    kernel = Kernel({"/current/theirs.txt": os.lstat(tmp_path / "old.txt"),  # a reply read from the old file
                     "/current/same.txt": os.lstat(tmp_path / "same.txt")})
    forgetter = WorktreeForgetter(kernel, "/current", str(tmp_path))
    forgetter.changed({"theirs.txt", "same.txt", "deleted.txt"}, ["deleted.txt"])
    kernel.invalidated.clear()
    assert forgetter.recheck() == ["theirs.txt"]
    assert kernel.invalidated == [["/current/theirs.txt"]]
    assert forgetter.recheck() == []  # compared once: told again, and left to the kernel


def test_a_replaced_name_shows_missing_from_the_freeze_until_the_kernel_is_told_to_forget_it(tmp_path):
    kernel = Kernel({})
    forgetter = WorktreeForgetter(kernel, "/current", str(tmp_path))
    forgetter.rewritten({"thing", "thing/inside", "gone.txt"}, ["thing", "gone.txt"])
    assert forgetter.replaced_meanwhile("/thing") and forgetter.replaced_meanwhile("/gone.txt")
    assert not forgetter.replaced_meanwhile("/thing/inside")
    forgetter.changed({"thing", "thing/inside", "gone.txt"}, ["thing", "gone.txt"])
    assert kernel.forgotten == ["/current/gone.txt", "/current/thing"]
    assert not forgetter.replaced_meanwhile("/thing")
    forgetter.rewritten({"other"}, ["other"])
    forgetter.settled()  # the sync failed before changed()
    assert not forgetter.replaced_meanwhile("/other")
