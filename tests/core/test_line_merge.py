"""Layer 1: the three-way line merge of one text file (gitfs/repo/merging/line_merge.py).

Each case gives base, remote and local and the exact bytes expected: the same on every
pygit2 (Debian 12's 1.11 and Debian 13's 1.17 run this table in CI, PyPI's newest too).
"""

import pytest

from gitfs.repo.merging.line_merge import LineMerge, merge_lines

LINES = "".join(f"line {n}\n" for n in range(1, 21))


def edited(text: str, **changes: str) -> str:
    """text with line N replaced (n10="x\\n"), or removed (n10="")."""
    lines = text.splitlines(keepends=True)
    for key, value in changes.items():
        lines[int(key[1:]) - 1] = value
    return "".join(lines)


CASES = {
    # name: (base, remote, local, expected, conflicting regions)
    "append/append": ("a\nb\n", "a\nb\nR\n", "a\nb\nL\n", "a\nb\nR\nL\n", 0),
    "append/append, several lines each": ("a\n", "a\nR1\nR2\n", "a\nL1\nL2\nL3\n", "a\nR1\nR2\nL1\nL2\nL3\n", 0),
    "insert/insert in the middle": (LINES, edited(LINES, n10="line 10\nR\n"), edited(LINES, n10="line 10\nL\n"),
                                    edited(LINES, n10="line 10\nR\nL\n"), 0),
    "append vs edit elsewhere": (LINES, LINES + "R\n", edited(LINES, n3="line 3 (L)\n"),
                                 edited(LINES, n3="line 3 (L)\n") + "R\n", 0),
    "edit/edit of the same line": (LINES, edited(LINES, n5="line 5 (R)\n", n18="line 18 (R)\n"),
                                   edited(LINES, n5="line 5 (L)\n"),
                                   edited(LINES, n5="line 5 (L)\n", n18="line 18 (R)\n"), 1),
    "edit vs delete of a line": (LINES, edited(LINES, n7="line 7 (R)\n"), edited(LINES, n7=""),
                                 edited(LINES, n7=""), 1),
    "delete vs edit of a line": (LINES, edited(LINES, n7=""), edited(LINES, n7="line 7 (L)\n"),
                                 edited(LINES, n7="line 7 (L)\n"), 1),
    "both delete the same line": (LINES, edited(LINES, n7=""), edited(LINES, n7=""), edited(LINES, n7=""), 0),
    "both make the same change": ("a\nb\n", "a\nB\nc\n", "a\nB\nc\n", "a\nB\nc\n", 0),
    "both append, one also edits": ("a\nb\n", "a\nB\nR\n", "a\nb\nL\n", "a\nb\nL\n", 1),
    "CRLF append/append": ("a\r\nb\r\n", "a\r\nb\r\nR\r\n", "a\r\nb\r\nL\r\n", "a\r\nb\r\nR\r\nL\r\n", 0),
    "no final newline, appends": ("a\nb", "a\nb\nR", "a\nb\nL", "a\nb\nR\nL", 0),
    "no final newline, CRLF": ("a\r\nb", "a\r\nb\r\nR", "a\r\nb\r\nL", "a\r\nb\r\nR\r\nL", 0),
    "the remote adds the final newline": ("a\nb", "a\nb\n", "X\na\nb", "X\na\nb\n", 0),
    "the local side removes it": ("a\nb\n", "a\nb\nR\n", "a\nb", "a\nb\nR", 0),
    "empty base": ("", "R\n", "L\n", "R\nL\n", 0),
    "empty base, no final newlines": ("", "R", "L", "R\nL", 0),
    "a lone CR is not a line end": ("a\rb\n", "a\rb\nR\n", "a\rb\nL\n", "a\rb\nR\nL\n", 0),
}


@pytest.mark.parametrize("name", CASES)
def test_three_way_cases(name):
    base, remote, local, expected, conflicts = CASES[name]
    result = merge_lines(base.encode(), remote.encode(), local.encode())
    assert result == LineMerge(expected.encode(), conflicts)


def test_latin1_text_merges_as_bytes():
    base = "café\n".encode("latin-1")
    result = merge_lines(base, base + "crème R\n".encode("latin-1"), base + "crème L\n".encode("latin-1"))
    assert result == LineMerge("café\ncrème R\ncrème L\n".encode("latin-1"), 0)


def test_utf8_beside_latin1_is_not_merged():
    base = b"plain ascii\n"
    assert merge_lines(base, base + "é\n".encode(), base + "é\n".encode("latin-1")) is None


def test_utf8_with_ascii_merges():
    base = b"plain ascii\n"
    assert merge_lines(base, base + "über\n".encode(), base + b"L\n") == LineMerge("plain ascii\nüber\nL\n".encode(), 0)


def test_utf16_is_binary():
    base = "a\nb\n".encode("utf-16")
    assert merge_lines(base, "a\nb\nR\n".encode("utf-16"), "a\nb\nL\n".encode("utf-16")) is None


def test_a_nul_past_the_first_8000_bytes_is_still_text():
    base = b"x" * 8000 + b"\n\0\n"
    assert merge_lines(base, base + b"R\n", base + b"L\n") == LineMerge(base + b"R\nL\n", 0)


def test_a_nul_within_the_first_8000_bytes_is_binary():
    base = b"x" * 7990 + b"\0\n"
    assert merge_lines(base, base + b"R\n", base + b"L\n") is None


def test_repeated_lines_do_not_misalign_paragraphs():
    # A document with many blank lines: each side rewrites one paragraph, plus appends.
    paragraphs = [f"paragraph {n} line {k}\n" for n in range(300) for k in range(3)]
    base_parts = [paragraphs[i:i + 3] for i in range(0, len(paragraphs), 3)]

    def document(changes, tail=""):
        return ("\n".join("".join(changes.get(n, part)) for n, part in enumerate(base_parts)) + tail).encode()

    base = document({})
    remote = document({100: ["remote rewrote 100\n"]}, tail="remote appended\n")
    local = document({200: ["local rewrote 200\n", "in two lines\n"]}, tail="local appended\n")
    expected = document({100: ["remote rewrote 100\n"], 200: ["local rewrote 200\n", "in two lines\n"]},
                        tail="remote appended\nlocal appended\n")
    assert merge_lines(base, remote, local) == LineMerge(expected, 0)


def test_a_ten_megabyte_file():
    base = b"".join(b"%08d,some value in a row of a big table\n" % n for n in range(250_000))
    assert len(base) > 10_000_000
    remote = base.replace(b"00000010,some", b"00000010,REMOTE", 1) + b"remote row\n"
    local = base.replace(b"00200000,some", b"00200000,LOCAL", 1) + b"local row\n"
    result = merge_lines(base, remote, local)
    assert result is not None and result.conflicts == 0
    assert result.content == (base.replace(b"00000010,some", b"00000010,REMOTE", 1)
                              .replace(b"00200000,some", b"00200000,LOCAL", 1) + b"remote row\nlocal row\n")
