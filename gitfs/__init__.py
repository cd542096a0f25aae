"""GitFS: a FUSE filesystem that turns every change into a Git commit."""

__version__ = "1.0.0"
