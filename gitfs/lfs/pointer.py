"""The LFS pointer: the small text a commit holds in place of a big file.

    version https://git-lfs.github.com/spec/v1
    oid sha256:<64 lowercase hex>
    size <bytes>

Read leniently, as git-lfs does (CRLF line ends, surrounding whitespace, empty lines,
the two version URLs used before git-lfs 1.0); written only in the canonical form
above. A pointer with extensions (`ext-N-name` lines) names content that only an
external program can rebuild: parse raises UnsupportedPointer for it, so that it is
never shown as content nor taken for an ordinary file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from gitfs.lfs.errors import UnsupportedPointer

VERSION = "https://git-lfs.github.com/spec/v1"
_VERSIONS = (VERSION, "https://hawser.github.com/spec/v1", "http://git-media.io/v/2")
_KEYS = ("version", "oid", "size")
_OID = re.compile(r"[0-9a-f]{64}")
_SIZE = re.compile(r"\+?[0-9]{1,20}")  # git-lfs takes "+12" and "012" too
_EXTENSION = re.compile(r"ext-[0-9]-[a-z0-9]+")

MAX_BYTES = 1023  # git-lfs reads at most 1024 bytes of a blob looking for a pointer
# The shortest text that can parse: the shortest version URL and a one-digit size.
MIN_BYTES = len(f"version {min(_VERSIONS, key=len)}\noid sha256:{'0' * 64}\nsize 0")


@dataclass(frozen=True)
class Pointer:
    oid: str  # sha256 of the content, 64 lowercase hex digits
    size: int  # bytes of the content

    def __post_init__(self) -> None:
        if not _OID.fullmatch(self.oid) or self.size < 0:
            raise ValueError(f"not an LFS object id and size: {self.oid!r} {self.size!r}")

    def encode(self) -> bytes:
        """The canonical pointer text (what `git lfs pointer --check --strict` accepts)."""
        return f"version {VERSION}\noid sha256:{self.oid}\nsize {self.size}\n".encode("ascii")


def could_be_pointer(size: int) -> bool:
    """Whether a blob of this size may hold a pointer (else no need to read it)."""
    return MIN_BYTES <= size <= MAX_BYTES


def parse(data: bytes) -> Optional[Pointer]:
    """The pointer that data holds, None if it holds none; UnsupportedPointer for a
    pointer with extensions."""
    if not could_be_pointer(len(data)):
        return None
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    values: dict[str, str] = {}
    extensions = []
    for line in text.splitlines():  # \n and \r\n alike
        line = line.rstrip("\r")
        if not line:
            continue
        key, space, value = line.partition(" ")
        if not space:
            return None
        expected = _KEYS[len(values)] if len(values) < len(_KEYS) else None
        if key == expected:
            values[key] = value
        elif _EXTENSION.fullmatch(key) and values:  # sorted: between version and oid
            extensions.append(key)
        else:
            return None
    if len(values) != len(_KEYS) or values["version"] not in _VERSIONS:
        return None
    algorithm, _colon, oid = values["oid"].partition(":")
    if algorithm != "sha256" or not _OID.fullmatch(oid) or not _SIZE.fullmatch(values["size"]):
        return None
    pointer = Pointer(oid, int(values["size"]))
    if extensions:
        raise UnsupportedPointer(f"LFS object {oid} needs the extensions {', '.join(extensions)}, "
                                 "which GitFS cannot run", pointer)
    return pointer
