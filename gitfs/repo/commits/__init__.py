"""The branch and what goes into it, the Repository's write side: the working tree staged into
the index (staging.py, index_entry.py), the index committed (writing.py), the branch moved and
the remote's tip recorded (refs.py), a branch's commits walked, each read once (commit_walk.py),
and what a content filter reads and stages through the core (filter_source.py)."""
