"""The monitor's capture key: `benchtop capture` of the source on show, for
a minute, on a worker thread (read-only, as the command), into a folder named
for the source and the time, beside the monitor's --out or in the current
folder."""

from __future__ import annotations

import time
from pathlib import Path

from benchtop.capture.model import CaptureSourceError, write_capture
from benchtop.capture.window import Reader, capture
from benchtop.target import Target

# the window of a capture started from the monitor
CAPTURE_S = 60.0
# each source kind that can be captured, and the view of its statements the key works from
STATEMENTS_VIEW = {"mysql": "statements", "postgresql": "statements", "proxysql": "digests"}


def capture_folder(base: Path, source: str, now: float) -> Path:
    """
    >>> capture_folder(Path("out"), "db 1", 0.0).as_posix()
    'out/capture-db_1-19700101-000000'
    """
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in source)
    return base / f"capture-{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}"


def _reader(kind: str, target: Target) -> Reader:
    if kind == "proxysql":
        from benchtop.capture.proxysql import ProxySQLReader

        return ProxySQLReader(target)
    if kind == "mysql":
        from benchtop.capture.mysql import MySQLReader

        return MySQLReader(target)
    from benchtop.capture.postgres import PostgresReader

    return PostgresReader(target)


def capture_to(kind: str, target: Target, folder: Path, seconds: float = CAPTURE_S) -> str:
    """Capture `target` into `folder` (on a worker thread: it takes
    `seconds`); the one line the monitor shows when it is done."""
    try:
        reader = _reader(kind, target)
    except CaptureSourceError as exc:
        return f"capture: {exc}"
    try:
        cap = capture(reader, seconds)
        path = write_capture(folder, cap)
    except CaptureSourceError as exc:
        return f"capture: {exc}"
    except OSError as exc:
        return f"capture: cannot write {folder}: {exc.strerror or exc}"
    finally:
        reader.close()
    return (f"captured {len(cap.statements)} statements, {cap.rate:.1f} transactions/s over {cap.window_s:.0f} s "
            f"into {path.parent} (benchtop workload from-capture {path.parent})")
