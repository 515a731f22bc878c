"""The typed record of a capture (capture.json): per statement its counts,
times and rows over the window, and what each placeholder was seen to take.

Everything is a delta between a reading at the start of the window and one
at its end, so nothing on the server needs resetting."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CAPTURE_JSON = "capture.json"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class Column:
    """What the server's statistics say of the column a placeholder is
    compared with or assigned to: its type, its range (indexed columns on
    MySQL/MariaDB, pg_stats' histogram bounds on PostgreSQL) and, for text, its
    declared length."""

    table: str
    name: str
    numeric: bool
    lo: float | None = None
    hi: float | None = None
    length: int = 0


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One `?` / `$n` of a statement: where it stands (`role`: eq, between_lo,
    between_hi, set, insert, arith, other) and the literal values seen for it."""

    index: int
    role: str
    column: Column | None = None
    samples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Statement:
    """A normalized statement (the server's text with its placeholders) and
    its totals over the window. `kind`: begin, commit, rollback, read, write
    or other."""

    text: str
    kind: str
    calls: int
    total_ms: float
    rows_sent: int = 0
    rows_affected: int = 0
    rows_examined: int = 0
    placeholders: tuple[Placeholder, ...] = ()

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0

    @property
    def rows(self) -> int:
        return self.rows_sent + self.rows_affected


@dataclass(frozen=True, slots=True)
class Same:
    """A placeholder that took, in every transaction or nearly, the value an
    earlier statement's placeholder took in the same transaction (pgbench's
    SELECT reads the account its UPDATE just wrote): equal in `equal` of the
    `of` transactions seen holding both statements."""

    statement: str
    index: int
    source: str
    source_index: int
    equal: int
    of: int


@dataclass(frozen=True, slots=True)
class Order:
    """The order the statements run in within a transaction (their texts,
    first to last) as `source` showed it in `transactions` transactions, whole
    or in part; the statements it leaves out were seen in too few of them."""

    source: str
    transactions: int
    statements: tuple[str, ...]
    shared: tuple[Same, ...] = ()
    # groups of statements of which a transaction ran one at most, each seen in many (the transactions seen whole)
    alternatives: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Order:
        return cls(str(d["source"]), int(d["transactions"]), tuple(str(t) for t in d["statements"]),
                   tuple(Same(str(x["statement"]), int(x["index"]), str(x["source"]), int(x["source_index"]),
                              int(x["equal"]), int(x["of"])) for x in d.get("shared", ())),
                   tuple(tuple(str(t) for t in g) for g in d.get("alternatives", ())))


@dataclass(frozen=True, slots=True)
class Capture:
    """A window of a server's statements. `engine`: mysql or postgresql;
    `literals`: the clients sent values in the statement text (so the twin
    does too), rather than as parameters of prepared statements; `order`:
    the statements' order within a transaction, None where nothing showed it."""

    engine: str
    target: str
    server_version: str
    started_at: float
    window_s: float
    transactions: int
    commits: int
    literals: bool
    sample_source: str
    statements: tuple[Statement, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    order: Order | None = None

    @property
    def rate(self) -> float:
        """Transactions per second (statements per second when no client
        opened a transaction)."""
        n = self.transactions or sum(s.calls for s in self.statements)
        return n / self.window_s if self.window_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["format"] = FORMAT
        out["rate"] = round(self.rate, 3)
        for s, d in zip(self.statements, out["statements"], strict=True):
            d["mean_ms"] = round(s.mean_ms, 4)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Capture:
        """A capture read back; extra keys (rate, mean_ms) are derived and dropped.

        >>> c = Capture("mysql", "m", "10.11", 0.0, 10.0, 5, 5, True, "none",
        ...             (Statement("BEGIN", "begin", 5, 0.5),))
        >>> Capture.from_dict(c.to_dict()) == c
        True
        >>> o = Order("pg_stat_activity", 9, ("UPDATE a", "SELECT a"), (Same("SELECT a", 0, "UPDATE a", 1, 9, 9),))
        >>> Capture.from_dict(Capture("postgresql", "p", "16", 0.0, 1.0, 9, 9, True, "x", (), (), o).to_dict()).order == o
        True
        """
        stmts = []
        for s in d.get("statements", ()):
            phs = tuple(
                Placeholder(int(p["index"]), str(p["role"]),
                            Column(**p["column"]) if p.get("column") else None,
                            tuple(str(v) for v in p.get("samples", ())))
                for p in s.get("placeholders", ()))
            stmts.append(Statement(str(s["text"]), str(s["kind"]), int(s["calls"]), float(s["total_ms"]),
                                   int(s.get("rows_sent", 0)), int(s.get("rows_affected", 0)),
                                   int(s.get("rows_examined", 0)), phs))
        return cls(str(d["engine"]), str(d["target"]), str(d["server_version"]), float(d["started_at"]),
                   float(d["window_s"]), int(d["transactions"]), int(d["commits"]), bool(d["literals"]),
                   str(d["sample_source"]), tuple(stmts), tuple(str(n) for n in d.get("notes", ())),
                   Order.from_dict(d["order"]) if d.get("order") else None)


class CaptureSourceError(RuntimeError):
    """A server that cannot be captured: one line saying why."""


class CaptureError(ValueError):
    """A capture folder that cannot be read; one line saying why."""


def write_capture(folder: Path, capture: Capture) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CAPTURE_JSON
    path.write_text(json.dumps(capture.to_dict(), indent=1) + "\n")
    return path


def read_capture(folder: Path) -> Capture:
    path = folder / CAPTURE_JSON if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CaptureError(f"{folder}: no {CAPTURE_JSON} (write one with benchtop capture --out DIR)") from None
    except (OSError, ValueError) as exc:
        raise CaptureError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CaptureError(f"{path}: not a capture of format {FORMAT}")
    try:
        return Capture.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CaptureError(f"{path}: a field is missing or wrong: {exc}") from None
