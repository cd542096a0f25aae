"""The branch's past as the mount shows it: its commits grouped by local day, for history/
(days.py), and every version of a file, for .gitfs/versions/ (versions.py)."""
