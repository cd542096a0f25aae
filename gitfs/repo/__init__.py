"""The git core: one clone with a working tree, read and written through pygit2. It imports
nothing of FUSE, the views, the sync workers or Git LFS; each package below imports only the
ones above it in this list, and those after repository.py none of each other
(tests/core/test_layers.py holds these rules).

top level      what every package shares: errors, filemodes, compat (pygit2 1.11 and later), refnames,
               beneath (paths under the clone, never through a link), private_dirs, credentials,
               libgit2 (process-wide settings), content_filter (what the core and a filter ask of each other)
objects/       the clone's state and per-thread handles; trees and blobs read, parsed, sized, streamed
commits/       the branch and the index: staging, committing, moving the branch, walking its commits
repository.py  the Repository, put together from its parts in objects/ and commits/
history/       the branch's commits by day, and every version of a file
workdir/       the working tree: brought to a commit's tree, ignore rules, hard links, extended attributes
merging/       "accept mine": local commits replayed on the remote's, the versions that lost, rescue branches
remote/        clone, fetch and push, and servers' words made fit to show
tidying/       the clone kept compact (git gc)
"""
