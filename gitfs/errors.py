"""Errors that end the program with one line on stderr (see cli.main)."""


class FatalError(Exception):
    """A startup failure the user can fix; its message is printed as is."""
