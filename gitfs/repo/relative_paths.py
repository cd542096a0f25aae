"""Paths relative to a tree's root, as Git and the views name them ("a/b/c")."""


def folders_above(path: str) -> list[str]:
    """The folders above `path`, deepest first, ending with the root (""):
    "a/b/c" -> ["a/b", "a", ""]. A child is always longer than its parent, so sorting
    by length, longest first, puts every folder before the folders above it."""
    parts = path.strip("/").split("/")
    return ["/".join(parts[:depth]) for depth in range(len(parts) - 1, -1, -1)]
