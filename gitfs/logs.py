"""Logging set-up: syslog, a file, or stderr; one line per event."""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys

FORMAT = "%(asctime)s %(levelname)s %(threadName)s: %(message)s"
SYSLOG_FORMAT = "gitfs[%(process)d]: %(threadName)s: %(message)s"


def configure(destination: str, level: str, *, foreground: bool) -> None:
    """destination: "syslog", "-" (stderr) or a file path."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if destination == "syslog" and foreground:
        destination = "-"  # attached to a terminal: show it there
    if destination == "syslog":
        if os.path.exists("/dev/log"):
            handler = logging.handlers.SysLogHandler(address="/dev/log")
            handler.setFormatter(logging.Formatter(SYSLOG_FORMAT))
        else:
            handler = logging.NullHandler()  # no syslog daemon (a container): nothing to write to
    elif destination in ("-", "/dev/stdout", "/dev/stderr"):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
    else:
        handler = logging.handlers.WatchedFileHandler(destination)  # logrotate-friendly
        handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper())
    # mfusepy logs every errno it returns at debug level: keep that for debug=true only.
    logging.getLogger("fuse").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
