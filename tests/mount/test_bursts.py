"""Layer 3: a burst of changes (fsstress-like: thousands of files, sparse ones, deep
folders, links) and what the status says until the remote has it: a script that waits
for "0 pending" must then find everything on the remote."""

import os

import fsstress

from helpers import plain_tree, read_status, remote_tree, wait_for, without_redundant_keeps


def nothing_pending(state: dict) -> bool:
    return state["pending"]["changes_not_committed"] == 0 and state["pending"]["commits_not_pushed"] == 0


def tree_of(root) -> dict:
    """{path: (mode, bytes)} under root/stress, paths starting with stress/."""
    return without_redundant_keeps({f"stress/{path}": entry for path, entry in plain_tree(root / "stress").items()})


def several_links(path) -> bool:
    return not os.path.islink(path) and os.path.isfile(path) and os.stat(path).st_nlink > 1


def test_after_a_burst_nothing_pending_means_the_remote_has_it(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=1)
    fsstress.run(mount.current / "stress", processes=4, operations=700, seed=32)
    states = []

    def done() -> bool:
        states.append(read_status(mount))
        return nothing_pending(states[-1])

    # A script waiting for "0 pending" from the end of the burst, then reading the remote.
    wait_for(done, timeout=300, interval=0.05, message="nothing pending")
    on_remote = without_redundant_keeps(remote_tree(remote.bare, prefix="stress"))
    on_disk = tree_of(mount.repo_path)  # what the programs wrote, in the clone's working tree
    assert len(on_disk) > 500
    assert sorted(set(on_disk) ^ set(on_remote)) == []
    assert on_remote == on_disk
    # current/ shows the same, but for the kernel's cache of a hard-linked file's names in
    # other folders, which a write through one name does not refresh (README, "Hard links").
    shown = tree_of(mount.current)
    assert set(shown) == set(on_remote)
    assert {path: entry for path, entry in shown.items() if not several_links(mount.repo_path / path)} == \
        {path: entry for path, entry in on_remote.items() if not several_links(mount.repo_path / path)}
    # While the batch was committed and pushed, the status said what ran.
    activity = [state["in_progress"] for state in states]
    assert any(entry["committing"] for entry in activity) or any(entry["pushing"] for entry in activity)

    fresh = mount_gitfs(remote)
    assert tree_of(fresh.current) == on_remote


def test_a_write_through_one_hard_link_reaches_the_other_name(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "a").write_text("one\n")
    os.link(mount.current / "a", mount.current / "b")
    wait_for(lambda: "b" in remote.files(), timeout=30, message="both names on the remote")
    (mount.current / "a").write_text("two\n")
    wait_for(lambda: remote.show("a") == b"two\n", timeout=30, message="the write on the remote")
    wait_for(lambda: nothing_pending(read_status(mount)), timeout=30, message="nothing pending")
    assert remote.show("b") == b"two\n"
