"""The gitolite rig itself (fixture `gitolite`): a reader clones `team` over SSH with the git
CLI, and gitolite refuses that reader's push, so tests of refused pushes stand on a real
forge's refusal."""

from __future__ import annotations

import subprocess

from helpers import git


def test_reader_clones_team_and_is_denied_a_push(gitolite, tmp_path):
    clone = tmp_path / "team"
    env = gitolite.git_env("reader")
    subprocess.run(["git", "clone", "-q", gitolite.url("team"), str(clone)], env=env, check=True,
                   capture_output=True)
    assert (clone / "README").read_text() == "The team's repository.\n"
    assert git("rev-parse", "HEAD", cwd=clone).strip() == gitolite.seeded["team"]

    (clone / "notes.txt").write_text("from the reader\n")
    git("add", "notes.txt", cwd=clone)
    git("commit", "-q", "-m", "reader's change", cwd=clone)
    push = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=clone, env=env, capture_output=True,
                          text=True)
    assert push.returncode != 0
    assert "FATAL: W any team reader DENIED by fallthru" in push.stderr
    assert git("--git-dir", str(gitolite.repository("team")), "rev-parse", "main").strip() == gitolite.seeded["team"]
