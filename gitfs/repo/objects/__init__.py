"""Reading trees and blobs, the Repository's read side: the clone's state and per-thread pygit2
handles (base.py, with the paths of the branch the disk cannot hold, skipped.py), trees and blobs
as readers see them (reading.py), trees parsed once for every thread (parsed_trees.py), and a
blob streamed out of its object file (blobstream.py), found through the packs' indexes
(packindex.py)."""
