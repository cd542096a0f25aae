"""The remote's commits and the local ones made one history, "accept mine": the local commits
replayed on the remote's tip (accept_mine.py), a text file merged line by line (line_merge.py),
the remote versions that lost, kept across mounts (conflicts.py), and the local history kept on
a branch when the remote's branch was rewritten (rescue.py)."""
