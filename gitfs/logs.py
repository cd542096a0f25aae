"""Logging set-up: syslog, a file, or stderr; one line per event."""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import threading

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
    threading.excepthook = _log_thread_crash
    # mfusepy logs every errno it returns at debug level: keep that for debug=true only.
    logging.getLogger("fuse").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)


def _log_thread_crash(args) -> None:
    """A worker that dies must say so in the log, not on a stderr nobody reads."""
    if args.exc_type is SystemExit:
        return
    logging.getLogger("gitfs").critical(
        "thread %s crashed", args.thread.name if args.thread else "?",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
