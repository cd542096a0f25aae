"""What a server or a URL says, made fit to show: a log line, the status file, `gitfs
status` on a terminal, a commit message. Credentials in URLs go (redact_url), and so does
whatever a terminal would act on rather than show (server_words). The git core and Git
LFS both show servers' words and URLs through here, and only once they have."""

from __future__ import annotations

import re

# A URL in a line of text: a scheme, then up to white space, a quote or an angle bracket;
# a last ".", ",", ":", ";" or ")" is the sentence's.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s'\"<>]*[^\s'\"<>.,:;)])?")
_AUTHORITY_END = re.compile(r"[/?#]")
# The start of an authority whose password holds a raw "/", "?" or "#" (user:pass/word@host):
# a colon followed by anything but a port number (an IPv6 host starts with "[").
_BROKEN_PASSWORD = re.compile(r"[^\[\]:@]*:(?!\d*$)")
_QUERY_START = re.compile(r"[?#]")
_PARAMETER_VALUE = re.compile(r"([?&;#][^=&;#?]*=)[^&;#]+")


def redact_url(text: str) -> str:
    """The URL (or every URL in a line of text) as logs, messages and the status may show it.

    The whole user information goes, up to the last "@" of the authority: a password may
    hold a raw "@" (and even a raw "/", "?" or "#", which git's own parsing then cuts
    short: the user information runs to the last "@" before the host). The value of every
    query (and fragment) parameter becomes "***", its name kept (`?private_token=***`): a
    forge's token often travels there, and which parameters hold one is the server's to
    say. A path, and an scp-like `user@host:path` (which holds no password), are kept."""
    return _URL_IN_TEXT.sub(_redacted, text)


def _redacted(match: re.Match) -> str:
    scheme, _, rest = match.group(0).partition("://")
    end = _authority_end(rest, 0)
    if "@" in rest[:end]:
        rest = rest[rest.rindex("@", 0, end) + 1:]
    elif _BROKEN_PASSWORD.match(rest[:end]) and "@" in rest[end:]:
        # user:pa/ss@host: the password runs past the first "/" to an "@".
        stop = _authority_end(rest, rest.index("@", end))
        rest = rest[rest.rindex("@", 0, stop) + 1:]
    query = _QUERY_START.search(rest)
    if query:
        rest = rest[:query.start()] + _PARAMETER_VALUE.sub(r"\1***", rest[query.start():])
    return f"{scheme}://{rest}"


def _authority_end(rest: str, start: int) -> int:
    """The first "/", "?" or "#" of `rest` from `start` on (where an authority ends), else its length."""
    found = _AUTHORITY_END.search(rest, start)
    return found.start() if found else len(rest)


# What a terminal would act on rather than show, in text from a server: escape sequences
# (colours, cursor moves, a window title, a hyperlink; C1's one-character forms too), the
# other control characters, and the marks that reorder text shown right to left.
_TERMINAL_CONTROLS = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, PM, APC, SOS
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SERVER_WORDS_LENGTH = 300


def server_words(text: str, limit: int = SERVER_WORDS_LENGTH) -> str:
    """Text that came from a server (a line it printed, its answer for a reference, an error
    of libgit2's that quotes it) as one line a log, the status file, `gitfs status` and a
    commit message may hold: escape sequences and control characters removed, white space
    made single spaces, credentials in URLs removed (redact_url), at most `limit` characters.
    Every word of a server goes through here, and only once it has, anywhere."""
    line = " ".join(_TERMINAL_CONTROLS.sub("", text).split())
    line = redact_url(line)
    return line if len(line) <= limit else line[:limit - 3] + "..."
