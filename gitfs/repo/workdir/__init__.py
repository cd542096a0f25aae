"""The clone's working tree: brought from one commit's tree to another's (worktree.py), GitFS's
ignore rules in the clone (ignore.py), the other names of hard-linked files (hard_links.py), and
the user.* extended attributes kept on its files (user_attributes.py)."""
