"""Entry point: `gitfs REMOTE_URL MOUNTPOINT [-o options]`.

The one place where a FatalError becomes one line on stderr and an exit code.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Optional

from gitfs import __version__, fuselib, privacy
from gitfs.errors import FatalError
from gitfs.options import HELP, parse_options
from gitfs.status_command import show_status


def split_argv(argv: list[str]) -> tuple[list[str], list[str], bool]:
    """(positional arguments, -o strings, -f given)."""
    positional, option_strings, foreground = [], [], False
    items = iter(argv)
    for arg in items:
        if arg == "-o":
            value = next(items, None)
            if value is None:
                raise FatalError("-o needs a value")
            option_strings.append(value)
        elif arg.startswith("-o"):
            option_strings.append(arg[2:])
        elif arg == "-f":
            foreground = True
        elif arg.startswith("-") and arg != "-":
            raise FatalError(f"unknown argument {arg!r} (see gitfs --help)")
        else:
            positional.append(arg)
    return positional, option_strings, foreground


def main(argv: Optional[list[str]] = None) -> int:
    from_process = argv is None  # this process's own command line, which `ps` shows
    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(HELP, end="")
        return 0
    if any(arg in ("-v", "--version", "-V") for arg in argv):
        print(f"GitFS {__version__}")
        return 0
    try:
        if argv[:1] == ["status"]:
            if len(argv) != 2:
                raise FatalError("usage: gitfs status MOUNTPOINT")
            return show_status(argv[1])
        positional, option_strings, foreground = split_argv(argv)
        if len(positional) != 2:
            raise FatalError("usage: gitfs REMOTE_URL MOUNTPOINT [-o option[=value],...]")
        if from_process:
            privacy.hide_url_password(positional[0], argv)  # runs this command again, without it
        url = privacy.handed_password(positional[0])
        options = privacy.move_url_credentials(parse_options(url, positional[1], option_strings))
        if foreground:
            options = dataclasses.replace(options, foreground=True)
        # libfuse 3 is chosen before anything imports mfusepy, which settles on a library at import.
        library = fuselib.choose()
        try:
            from gitfs.daemon import run  # imports mfusepy (loads libfuse): after the cheap checks
        except ModuleNotFoundError as error:
            raise FatalError(f"Python module {error.name} is missing for {sys.executable}: install it with "
                             f"{sys.executable} -m pip install 'mfusepy>=3.0' 'pygit2>=1.11' "
                             f"(see README, Install)") from None
        except (OSError, ImportError) as error:
            raise FatalError(f"FUSE is not available ({error}): install fuse3") from None
        fuselib.check_loaded(library)
        return run(options, library)
    except FatalError as error:
        print(f"gitfs: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
