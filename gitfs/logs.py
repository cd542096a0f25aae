"""Logging set-up: syslog, a file, or stderr; one line per event.

Every event is one line: `TIME LEVEL THREAD: message`. A message that spans
lines (a git error, a traceback) continues on lines indented by four spaces,
so that every line that starts in column 0 is one event.

Below debug level there is no line per FUSE call: mfusepy logs each errno it
returns at debug level, and GitFS logs only what changes something (a commit,
a push, a fetch that brought changes, a failure).
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import logging.handlers
import os
import sys
import threading
from typing import Optional

from gitfs.errors import FatalError

FORMAT = "%(asctime)s %(levelname)s %(threadName)s: %(message)s"
SYSLOG_FORMAT = "gitfs[%(process)d]: %(levelname)s %(threadName)s: %(message)s"
STDERR_DESTINATIONS = ("-", "/dev/stdout", "/dev/stderr")

_destination = "-"
_crash_record = None  # the file faulthandler writes a crash to
CRASH_FILE = "crash.log"


class OneLineFormatter(logging.Formatter):
    """Continuation lines (tracebacks, multi-line git errors) are indented."""

    def format(self, record: logging.LogRecord) -> str:
        if record.threadName and record.threadName.startswith("Dummy-"):
            # A thread libfuse started (Python names it Dummy-N): say so.
            record.threadName = "fuse-" + record.threadName[len("Dummy-"):]
        return super().format(record).replace("\n", "\n    ")


class RotatedLogFile(logging.handlers.WatchedFileHandler):
    """The log file, opened again by name once logrotate has moved it; a crash's stacks
    follow it there (faulthandler keeps a descriptor of its own)."""

    def reopenIfNeeded(self) -> None:
        stream = self.stream
        super().reopenIfNeeded()
        if self.stream is not stream:
            _crash_record_to(self.baseFilename)


def configure(destination: str, level: str, *, foreground: bool) -> None:
    """destination: "syslog", "-" (stderr) or a file path."""
    global _destination
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if destination == "syslog" and foreground:
        destination = "-"  # attached to a terminal: show it there
    if destination == "syslog":
        if os.path.exists("/dev/log"):
            handler = logging.handlers.SysLogHandler(address="/dev/log")
            handler.setFormatter(OneLineFormatter(SYSLOG_FORMAT))
        else:
            handler = logging.NullHandler()  # no syslog daemon (a container): nothing to write to
    elif destination in STDERR_DESTINATIONS:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLineFormatter(FORMAT))
    else:
        try:
            handler = RotatedLogFile(destination)
        except OSError as error:
            raise FatalError(f"cannot open the log file {destination}: {error.strerror} (option log)") from None
        handler.setFormatter(OneLineFormatter(FORMAT))
    _destination = destination
    _record_crashes(destination)
    root.addHandler(handler)
    root.setLevel(level.upper())
    threading.excepthook = _log_thread_crash
    # mfusepy logs every errno it returns at debug level: keep that for debug=true only.
    logging.getLogger("fuse").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    logging.getLogger("sh").setLevel(logging.WARNING)  # the git program run through sh: one line per process


def _record_crashes(destination: str) -> None:
    """A crash in C (a segmentation fault in a library) kills the daemon before any
    handler runs: faulthandler writes every thread's stack to the log file (else to
    stderr) from the signal itself, so that the log tells what the daemon was doing.
    Syslog takes no such writes: record_crashes_in() names a file once the clone is known."""
    _crash_record_to(destination if destination not in STDERR_DESTINATIONS and destination != "syslog" else None)


def record_crashes_in(folder: str) -> None:
    """With the log in syslog, a crash's stacks go to folder/crash.log (the clone's own
    folder for GitFS's records: a daemon's stderr is /dev/null)."""
    if _destination == "syslog":
        _crash_record_to(os.path.join(folder, CRASH_FILE))


def _crash_record_to(path: Optional[str]) -> None:
    global _crash_record
    previous = _crash_record
    _crash_record = None
    if path is not None:
        with contextlib.suppress(OSError):
            _crash_record = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept for the process's life
    try:
        faulthandler.enable(_crash_record or sys.stderr, all_threads=True)
    except (ValueError, OSError):  # a stderr without a descriptor (a test's capture)
        pass
    if previous is not None:
        previous.close()


def startup_error(message: str) -> None:
    """A startup error goes to the log too; stderr gets it from the command line (cli.main).

    Not when the log is stderr already: the user would read it twice."""
    if _destination not in STDERR_DESTINATIONS:
        logging.getLogger("gitfs").error("cannot mount: %s", message)


def startup_warning(message: str) -> None:
    """A warning before the mount answers: on stderr for the user who ran the command
    (one line), and in the log."""
    print(f"gitfs: warning: {message}", file=sys.stderr)
    if _destination not in STDERR_DESTINATIONS:
        logging.getLogger("gitfs").warning("%s", message)


def startup_alarm(message: str) -> None:
    """An error before the mount answers that does not stop it (the user must act): on
    stderr (one line) and in the log, at ERROR."""
    print(f"gitfs: error: {message}", file=sys.stderr)
    if _destination not in STDERR_DESTINATIONS:
        logging.getLogger("gitfs").error("%s", message)


def _log_thread_crash(args) -> None:
    """A worker that dies must say so in the log, not on a stderr nobody reads."""
    if args.exc_type is SystemExit:
        return
    logging.getLogger("gitfs").critical(
        "thread %s crashed", args.thread.name if args.thread else "?",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
