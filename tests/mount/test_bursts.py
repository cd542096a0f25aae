"""Layer 3: a burst of changes (fsstress-like: thousands of files, sparse ones, deep
folders, links; at the same time fsx-like: one file read, written, truncated, mapped,
allocated and punched, every read checked) and what follows it: the status until the
remote has it (a script that waits for "0 pending" must then find everything on the
remote), and an unmount right after it."""

import os
import time

import fsstress
import fsx
import pytest

from helpers import plain_tree, read_status, remote_tree, wait_for, without_redundant_keeps

FOLDERS = ("stress", "fsx")  # fsstress's tree, fsx's file
FSX_FILE = "fsx/file"
# What fsx must find supported on current/ (the clone is on a file system that has them;
# FALLOC_FL_ZERO_RANGE reaches a FUSE file system only on newer kernels).
FALLOCATE_KINDS = {"allocate", "allocate_keep_size", "punch_hole"}
# (fsstress operations per process, fsx operations): a few tens of seconds in `make test`.
BURSTS = [pytest.param(700, 3000, id="test"),
          pytest.param(3000, 30000, id="stress", marks=pytest.mark.stress)]


def nothing_pending(state: dict) -> bool:
    return state["pending"]["changes_not_committed"] == 0 and state["pending"]["commits_not_pushed"] == 0


def tree_of(root) -> dict:
    """{path: (mode, bytes)} of the burst's folders under root, paths starting with their names."""
    return without_redundant_keeps({f"{folder}/{path}": entry for folder in FOLDERS
                                    for path, entry in plain_tree(root / folder).items()})


def remote_tree_of(remote) -> dict:
    return without_redundant_keeps({path: entry for folder in FOLDERS
                                    for path, entry in remote_tree(remote.bare, prefix=folder).items()})


def burst(mount, operations: int, fsx_operations: int, seed: int, log_dir=None) -> None:
    """fsstress (4 processes) in current/stress and, at the same time, fsx on current/fsx/file;
    log_dir: where fsstress logs its links and renames (fsstress.names_ever_linked)."""
    (mount.current / "fsx").mkdir()
    workers = fsstress.start(mount.current / "stress", processes=4, operations=operations, seed=seed,
                             log_dir=log_dir)
    try:
        result = fsx.run(mount.current / FSX_FILE, operations=fsx_operations, seed=seed)
    finally:
        fsstress.wait(workers)
    print(result.summary())
    assert not FALLOCATE_KINDS & result.unsupported, result.summary()


@pytest.mark.parametrize(("operations", "fsx_operations"), BURSTS)
def test_after_a_burst_nothing_pending_means_the_remote_has_it(remote, mount_gitfs, tmp_path, operations,
                                                               fsx_operations):
    mount = mount_gitfs(remote, sync_timeout=1)
    log_dir = tmp_path / "fsstress-log"
    log_dir.mkdir()
    burst(mount, operations, fsx_operations, seed=32, log_dir=log_dir)
    states = []

    def done() -> bool:
        states.append(read_status(mount))
        return nothing_pending(states[-1])

    # A script waiting for "0 pending" from the end of the burst, then reading the remote.
    wait_for(done, timeout=300, interval=0.05, message="nothing pending")
    on_remote = remote_tree_of(remote)
    on_disk = tree_of(mount.repo_path)  # what the programs wrote, in the clone's working tree
    assert len(on_disk) > 500
    assert sorted(set(on_disk) ^ set(on_remote)) == []
    assert on_remote == on_disk
    # current/ shows the same, but for the kernel's cache of a hard-linked file's names in
    # other folders, which a write through one name does not refresh (README, "Hard links"):
    # a name that was ever one of several, since a name that stays keeps what the kernel
    # holds of it when the other names go.
    shown = tree_of(mount.current)
    assert set(shown) == set(on_remote)
    linked = fsstress.names_ever_linked(log_dir)
    assert {path: entry for path, entry in shown.items() if os.path.basename(path) not in linked} == \
        {path: entry for path, entry in on_remote.items() if os.path.basename(path) not in linked}
    # While the batch was committed and pushed, the status said what ran.
    activity = [state["in_progress"] for state in states]
    assert any(entry["committing"] for entry in activity) or any(entry["pushing"] for entry in activity)

    fresh = mount_gitfs(remote)
    assert tree_of(fresh.current) == on_remote


@pytest.mark.parametrize(("operations", "fsx_operations"), BURSTS)
def test_unmount_right_after_a_burst_commits_and_pushes_it(remote, mount_gitfs, operations, fsx_operations):
    mount = mount_gitfs(remote, sync_timeout=1)
    burst(mount, operations, fsx_operations, seed=33)
    unmounting = time.monotonic()
    assert mount.stop(timeout=600) == 0  # fusermount3 -u, then the daemon's exit
    print(f"unmounted in {time.monotonic() - unmounting:.1f} s")
    # The push has 30 s once the last commit is made; one that did not make
    # it would leave the remote short of the burst.
    assert "did not stop within" not in mount.log_text()
    assert "next mount pushes it" not in mount.log_text()
    written = tree_of(mount.repo_path)  # what the programs wrote, left in the clone
    assert len(written) > 500
    assert remote_tree_of(remote) == written


def test_a_write_through_one_hard_link_reaches_the_other_name(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "a").write_text("one\n")
    os.link(mount.current / "a", mount.current / "b")
    wait_for(lambda: "b" in remote.files(), timeout=30, message="both names on the remote")
    (mount.current / "a").write_text("two\n")
    wait_for(lambda: remote.show("a") == b"two\n", timeout=30, message="the write on the remote")
    wait_for(lambda: nothing_pending(read_status(mount)), timeout=30, message="nothing pending")
    assert remote.show("b") == b"two\n"
