"""Layer 3: a real mount, read and written by real programs."""

from helpers import wait_for


def test_mount_lists_current_and_history_and_pushes_a_write(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    assert sorted(p.name for p in mount.path.iterdir()) == ["current", "history"]
    assert (mount.current / "testing").read_text() == "just testing around here\n"
    (mount.current / "new_file").write_text("hello\n")
    wait_for(lambda: remote.log()[0] == "Update /new_file", message="the commit on the remote")
    assert remote.show("new_file") == b"hello\n"
