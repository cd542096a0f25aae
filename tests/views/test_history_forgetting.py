"""Layer 1: what an idle mount has the kernel forget of history/ (cache_policy.HistoryForgetter),
and the working directories it leaves alone (working_dirs.py), read from a real /proc."""

import os
import subprocess

from gitfs.cache_policy import HistoryForgetter
from gitfs.working_dirs import working_dirs

DAYS = {"2024-05-01": ["10-00-00-aaaaaaaaaa", "11-00-00-bbbbbbbbbb"], "2024-05-02": ["09-00-00-cccccccccc"],
        "2024-05-03": ["08-00-00-dddddddddd", "09-30-00-eeeeeeeeee"]}


class Kernel:
    """fuse_binding.KernelCache as the forgetters use it, recording what it is told."""

    active = True

    def __init__(self, known):
        self.known = known  # mount path -> node id
        self.forgotten: list[tuple[int, str]] = []

    def node_ids(self, paths):
        return {path: self.known[path] for path in paths if path in self.known}

    def forget_entries(self, parents, removed):
        for path in removed:
            parent, _name = path.rsplit("/", 1)
            if parent in parents:
                self.forgotten.append((parents[parent], path))

    def invalidate(self, paths):
        pass

    def invalidate_while_serving(self, paths):
        pass


def forgetter(kernel, indexed=tuple(DAYS)):
    return HistoryForgetter(kernel, "/history", new_days=lambda old, new: None, all_days=lambda: list(DAYS),
                            indexed_days=lambda: list(indexed), commits_of=DAYS.get)


def test_each_day_is_forgotten_with_everything_below_it():
    kernel = Kernel({"/history": 2})
    assert forgetter(kernel).forget_names(set()) == 3
    assert kernel.forgotten == [(2, "/history/2024-05-01"), (2, "/history/2024-05-02"), (2, "/history/2024-05-03")]


def test_a_day_someone_works_in_keeps_its_name_and_forgets_its_commits_but_a_working_one():
    kernel = Kernel({"/history": 2, "/history/2024-05-03": 9})
    busy = {"/", "/history", "/history/2024-05-03", "/history/2024-05-03/09-30-00-eeeeeeeeee",
            "/history/2024-05-01/10-00-00-aaaaaaaaaa/src"}
    assert forgetter(kernel).forget_names(busy) == 3
    assert kernel.forgotten == [  # a day above a deeper working directory goes: the path stays whole
        (2, "/history/2024-05-01"), (2, "/history/2024-05-02"), (9, "/history/2024-05-03/08-00-00-dddddddddd")]


def test_nothing_is_told_before_history_was_used():
    kernel = Kernel({"/history": 2})
    assert forgetter(kernel, indexed=()).forget_names(set()) == 0
    assert kernel.forgotten == []


def test_working_dirs_are_read_from_proc_as_mount_paths(tmp_path):
    folder = tmp_path / "history" / "2024-05-01"
    folder.mkdir(parents=True)
    sitting = [subprocess.Popen(["sleep", "30"], cwd=path) for path in (folder, tmp_path)]
    try:
        assert working_dirs(str(tmp_path)) == {"/history/2024-05-01", "/"}
        assert working_dirs(str(tmp_path / "history" / "2024-05")) == set()  # a name's prefix is not a folder
    finally:
        for program in sitting:
            program.kill()
            program.wait()
    assert working_dirs(str(tmp_path)) == set()
    assert working_dirs(str(tmp_path), proc=os.path.join(str(tmp_path), "no-proc")) == set()
