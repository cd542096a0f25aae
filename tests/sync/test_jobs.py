"""Layer 2: commit jobs, the batch message and the queue of pending jobs (gitfs/sync/jobs.py)."""

import dataclasses
import threading

import pytest

from gitfs.sync.jobs import CommitJob, PendingJobs, batch_message, describe_batch, job_paths
from helpers import FakeClock


def test_one_job_keeps_its_message_verbatim():
    assert batch_message([CommitJob("Update /new_file", add=("new_file",))]) == "Update /new_file"
    assert batch_message([CommitJob("Rename /a to /b", add=("b",), remove=("a",))]) == "Rename /a to /b"


def test_ten_new_files():
    jobs = [CommitJob(f"Update /f{n}", add=(f"f{n}",)) for n in range(10)]
    assert batch_message(jobs) == "Update 10 items. Added 10 items."


def test_added_and_removed_counts_per_job_union_for_updated():
    # The original's unit test: add [p1, p2] + remove [p2].
    jobs = [CommitJob("one", add=("p1", "p2")), CommitJob("two", remove=("p2",))]
    assert batch_message(jobs) == "Update 2 items. Added 2 items. Removed 1 items."


def test_same_path_twice_counts_once_as_updated_and_twice_as_added():
    # write + fsync of one file in the original.
    jobs = [CommitJob("Update /f", add=("f",)), CommitJob("Fsync /f", add=("f",))]
    assert batch_message(jobs) == "Update 1 items. Added 2 items."


def test_removals_only_omit_the_added_part():
    jobs = [CommitJob("Delete the /a directory", remove=("a/.keep",)),
            CommitJob("Delete the /a/b directory", remove=("a/b/.keep",))]
    assert batch_message(jobs) == "Update 2 items. Removed 2 items."


def test_mkdir_p_three_levels():
    jobs = [CommitJob(f"Create the /{d} directory", add=(f"{d}/.keep",)) for d in ("a", "a/b", "a/b/c")]
    assert batch_message(jobs) == "Update 3 items. Added 3 items."


def test_duplicate_paths_inside_one_job_count_once():
    assert batch_message([CommitJob("x", add=("a", "a")), CommitJob("y", add=("b",))]) == \
        "Update 2 items. Added 2 items."


def test_jobs_with_no_paths_say_zero_items():
    assert batch_message([CommitJob("x"), CommitJob("y")]) == "Update 0 items."


def test_job_paths_strip_slashes_and_merge():
    jobs = [CommitJob("a", add=("/x", "y/")), CommitJob("b", remove=("x",))]
    assert job_paths(jobs) == {"x", "y"}


def test_commit_job_is_a_frozen_value():
    job = CommitJob("m", add=("a",), remove=("b",))
    assert job.paths == ("a", "b")
    assert job == CommitJob("m", add=("a",), remove=("b",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.message = "other"


def waiter(jobs: PendingJobs) -> tuple[threading.Thread, list[bool]]:
    """A thread in jobs.wait(60), as the sync worker waits; its result lands in the list."""
    woken: list[bool] = []
    thread = threading.Thread(target=lambda: woken.append(jobs.wait(60)), daemon=True)
    thread.start()
    return thread, woken


def test_the_first_job_ends_a_wait_and_later_ones_do_not():
    jobs = PendingJobs()
    thread, woken = waiter(jobs)
    jobs.put(CommitJob("Update /a", add=("a",)))
    thread.join(30)
    assert woken == [False]  # news, not a wake-up

    # Jobs already wait: the worker sleeps until the quiet period ends; a job per file
    # of a tar x must not wake it every time.
    thread, woken = waiter(jobs)
    for number in range(20):
        jobs.put(CommitJob(f"Update /f{number}", add=(f"f{number}",)))
    thread.join(0.3)
    assert thread.is_alive() and woken == []
    jobs.wake()
    thread.join(30)
    assert woken == [True]
    assert len(jobs.take()) == 21


def test_after_take_the_next_job_is_news_again():
    jobs = PendingJobs()
    jobs.put(CommitJob("one", add=("a",)))
    jobs.wait(0)
    jobs.take()
    thread, woken = waiter(jobs)
    jobs.put(CommitJob("two", add=("b",)))
    thread.join(30)
    assert not thread.is_alive() and woken == [False]



def test_a_job_s_age_runs_from_its_put_on_the_queue_s_clock_and_a_give_back_keeps_it():
    clock = FakeClock()
    jobs = PendingJobs(clock=clock)
    jobs.put(CommitJob("Rename /a to /a~", add=("a~",), remove=("a",)))
    clock.advance(5)
    jobs.give_back(jobs.take())  # a save in progress: it waits
    clock.advance(3)
    (job,) = jobs.take()
    assert jobs.age(job) == 8


# -- describe_batch: the message from what the commit changes --------------------------

def test_describe_keeps_the_message_of_a_batch_whose_jobs_all_changed_what_they_name():
    rename = CommitJob("Rename /a to /b", add=("b",), remove=("a",))
    assert describe_batch([rename], {"a": "Deleted", "b": "Created"}) == "Rename /a to /b"
    jobs = [CommitJob(f"Update /f{n}", add=(f"f{n}",)) for n in range(3)]
    assert describe_batch(jobs, {f"f{n}": "Created" for n in range(3)}) == "Update 3 items. Added 3 items."
    folder = CommitJob("Create the /d directory", add=("d/.keep",))
    assert describe_batch([folder], {"d/.keep": "Created"}) == "Create the /d directory"


def test_describe_tells_a_save_through_a_temporary_as_the_document_s_change():
    jobs = [CommitJob("Created /.x.tmp", add=(".x.tmp",)),
            CommitJob("Rename /.x.tmp to /x", add=("x",), remove=(".x.tmp",))]
    assert describe_batch(jobs, {"x": "Update"}) == "Update /x"
    assert describe_batch(jobs, {"x": "Created"}) == "Created /x"


def test_describe_never_says_deleted_and_created_of_one_document():
    jobs = [CommitJob("Rename /x to /x~", add=("x~",), remove=("x",)), CommitJob("Created /x", add=("x",)),
            CommitJob("Deleted /x~", remove=("x~",))]
    assert describe_batch(jobs, {"x": "Update"}) == "Update /x"


def test_describe_counts_what_changed_when_jobs_left_no_trace():
    jobs = [CommitJob("Rename /x to /x~", add=("x~",), remove=("x",)), CommitJob("Created /x", add=("x",)),
            CommitJob("Update /y", add=("y",)), CommitJob("Delete the /d directory", remove=("d",))]
    changes = {"x": "Update", "y": "Created", "d/a": "Deleted", "d/b": "Deleted"}
    assert describe_batch(jobs, changes) == "Update 4 items. Added 2 items. Removed 2 items."


def test_describe_a_batch_that_changes_nothing():
    jobs = [CommitJob("Created /4913", add=("4913",)), CommitJob("Deleted /4913", remove=("4913",))]
    assert describe_batch(jobs, {}) == batch_message(jobs)


def test_describe_counts_the_commit_s_changes_not_the_jobs():
    writes = [CommitJob("Update /data", add=("data",)) for _ in range(15445)]
    jobs = writes + [CommitJob("Update /a", add=("a",)), CommitJob("Update /b", add=("b",))]
    assert describe_batch(jobs, {"data": "Update", "a": "Created", "b": "Created"}) == \
        "Update 3 items. Added 3 items."
    folders = [CommitJob(f"Create the /d{n} directory", add=(f"d{n}/.keep",)) for n in range(10)]
    files = [CommitJob(f"Update /d{n}/f{k}", add=(f"d{n}/f{k}",)) for n in range(10) for k in range(20)]
    changes = {f"d{n}/f{k}": "Created" for n in range(10) for k in range(20)}
    changes.update({f"d{n}/.keep": "Created" for n in range(10)})
    assert describe_batch(folders + files, changes) == "Update 210 items. Added 210 items."


def test_describe_counts_the_other_name_of_a_hard_link_the_job_wrote_through():
    jobs = [CommitJob("Update /a", add=("a",))]
    assert describe_batch(jobs, {"a": "Update", "b": "Update"}) == "Update 2 items. Added 2 items."
    rename = CommitJob("Rename /d to /e", add=("e",), remove=("d",))
    assert describe_batch([rename], {"d/x": "Deleted", "e/x": "Created"}) == "Rename /d to /e"
