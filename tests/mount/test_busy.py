"""A folder that never rests: loggers that write all day beside people saving documents.
Real mounts, real loggers (a program reopening its CSV for every row, one holding its
file open, Python's logging.FileHandler, `tee -a`), `sync_timeout=1,max_sync_delay=3`:
every change reaches the remote within max_sync_delay while the writing goes on."""

from __future__ import annotations

import logging
import subprocess
import threading
import time

from helpers import read_status, run_gitfs, wait_for

BUSY = {"sync_timeout": 1, "max_sync_delay": 3, "fetch_timeout": 1}


class Logger(threading.Thread):
    """A row every `pace` seconds until stopped, through `write(row)`."""

    def __init__(self, write, pace: float):
        super().__init__(daemon=True)
        self.write, self.pace = write, pace
        self.rows: list[str] = []
        self.stop = threading.Event()
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(self.pace):
            row = f"{time.time():.3f},row {len(self.rows)}"
            try:
                self.write(row)
            except OSError as error:
                self.failures.append(str(error))
                return
            self.rows.append(row)

    def end(self) -> None:
        self.stop.set()
        self.join(10)
        assert not self.failures, self.failures


def remote_rows(remote, path: str) -> list[str]:
    try:
        return remote.show(path).decode().splitlines()
    except subprocess.CalledProcessError:  # not on the remote yet
        return []


def test_a_logger_reopening_its_file_every_0_4_s_reaches_the_remote_while_it_runs(remote, mount_gitfs):
    mount = mount_gitfs(remote, **BUSY)

    def append(row: str) -> None:
        with open(mount.current / "readings.csv", "a") as handle:
            handle.write(row + "\n")

    logger = Logger(append, 0.4)
    logger.start()
    try:
        wait_for(lambda: len(remote_rows(remote, "readings.csv")) >= 5, timeout=60,
                 message="rows on the remote while the logger runs")
        assert logger.is_alive() and not logger.stop.is_set()
        on_remote = remote_rows(remote, "readings.csv")
        assert on_remote == logger.rows[:len(on_remote)]  # whole rows, in order, none torn
    finally:
        logger.end()
    wait_for(lambda: remote_rows(remote, "readings.csv") == logger.rows, timeout=60, message="every row")


def test_a_file_held_open_and_written_all_along_holds_back_neither_itself_nor_a_save_beside_it(remote, mount_gitfs):
    mount = mount_gitfs(remote, **BUSY)
    held = open(mount.current / "station.csv", "a", buffering=1)  # line-buffered: a write(2) per row
    logger = Logger(lambda row: held.write(row + "\n"), 0.5)
    logger.start()
    try:
        wait_for(lambda: any(entry["path"] == "station.csv" for entry in read_status(mount)["writing"]),
                 timeout=30, message="the status naming the file being written")
        said = run_gitfs("status", mount.path).stdout
        assert "writing:     /station.csv is being written" in said
        (mount.current / "notes.txt").write_text("saved once, beside the logger\n")
        wait_for(lambda: remote_rows(remote, "notes.txt") == ["saved once, beside the logger"], timeout=60,
                 message="the document on the remote while the logger writes")
        wait_for(lambda: len(remote_rows(remote, "station.csv")) >= 3, timeout=60,
                 message="the held file's rows on the remote")
        assert logger.is_alive()
        on_remote = remote_rows(remote, "station.csv")
        assert on_remote == logger.rows[:len(on_remote)]
        messages = remote.log()
        assert "Update /station.csv (still being written)" in messages or any(
            message.startswith("Update 2 items") for message in messages)
    finally:
        logger.end()
        held.close()
    wait_for(lambda: remote_rows(remote, "station.csv") == logger.rows, timeout=60, message="every row")


def test_python_logging_and_tee_as_real_loggers(remote, mount_gitfs):
    mount = mount_gitfs(remote, **BUSY)
    handler = logging.FileHandler(mount.current / "app.log")
    application = logging.getLogger("an.application")
    application.addHandler(handler)
    application.setLevel(logging.INFO)
    tee = subprocess.Popen(["tee", "-a", str(mount.current / "tee.log")], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, text=True, bufsize=1)
    try:
        logged: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = f"event {len(logged)}"
            application.info(line)
            assert tee.stdin is not None
            tee.stdin.write(line + "\n")
            tee.stdin.flush()
            logged.append(line)
            if len(remote_rows(remote, "app.log")) >= 3 and len(remote_rows(remote, "tee.log")) >= 3:
                break
            time.sleep(0.3)  # the application's pace: a line every 0.3 s, never quiet for sync_timeout
        else:
            raise AssertionError("the logs never reached the remote while they were written")
        for name in ("app.log", "tee.log"):
            on_remote = remote_rows(remote, name)
            assert on_remote == logged[:len(on_remote)], name
    finally:
        application.removeHandler(handler)
        handler.close()
        if tee.stdin is not None:
            tee.stdin.close()
        tee.wait(10)


def test_a_colleague_s_change_to_a_file_held_open_here_is_merged_and_shows_once_it_is_closed(remote, mount_gitfs):
    remote.commit({"station.csv": "header\n"}, "the station's file")
    mount = mount_gitfs(remote, **BUSY)
    held = open(mount.current / "station.csv", "a", buffering=1)
    logger = Logger(lambda row: held.write(row + "\n"), 0.5)
    logger.start()
    try:
        wait_for(lambda: len(remote_rows(remote, "station.csv")) >= 3, timeout=60, message="the logger's rows")
        remote.commit({"station.csv": remote.show("station.csv").decode() + "a colleague's note\n"},
                      "a colleague's note")
        pushed_then = len(logger.rows)
        # The logger's rows go on reaching the remote, merged with the colleague's line.
        wait_for(lambda: len(set(remote_rows(remote, "station.csv")) & set(logger.rows)) >= pushed_then + 4,
                 timeout=60, message="rows written after the colleague's push on the remote")
        assert logger.is_alive()
        assert remote_rows(remote, "station.csv").count("a colleague's note") == 1
    finally:
        logger.end()
        held.close()
    expected = sorted(["header", "a colleague's note", *logger.rows])
    wait_for(lambda: sorted(remote_rows(remote, "station.csv")) == expected, timeout=60, message="every row once")
    wait_for(lambda: sorted((mount.current / "station.csv").read_text().splitlines()) == expected, timeout=60,
             message="current/ showing the colleague's line once the file is closed")
