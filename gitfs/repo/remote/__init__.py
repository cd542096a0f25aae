"""The network side of the git core: clone, fetch and push (transfer.py), and what a server or a
URL says made fit to show (server_text.py, which Git LFS uses too). What to offer a server and
whom to trust is credentials.py, at the top level: libgit2's process-wide settings use it too."""
