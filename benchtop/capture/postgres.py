"""PostgreSQL's pg_stat_statements, read with SELECTs only (never
pg_stat_statements_reset).  Values come from the queries pg_stat_activity
shows while the window lasts (under the simple protocol they hold their
literals); a placeholder never seen gets its column's range from pg_stats'
histogram bounds.  A backend caught inside a transaction is read again at
once, a few times while that transaction lasts, so its statements are seen
in their order (under one xact_start) and with the values they share."""

from __future__ import annotations

from typing import Any

from benchtop.capture.model import CaptureSourceError, Column
from benchtop.capture.normalize import folded, literal_values, with_numbered_params
from benchtop.capture.order import Seen
from benchtop.capture.window import Totals
from benchtop.errors import one_line
from benchtop.target import Target, pq
from benchtop.target.connection import libpq_conninfo, libpq_params

# this reader's own statements carry it, and the monitor's theirs, so both stay out of the capture
TAG = "/* benchtop-capture */"
_MONITOR_TAG = "/* benchtop-monitor */"
_NUMERIC = {"smallint", "integer", "bigint", "numeric", "real", "double precision", "decimal"}
_ACTIVITY = ("SELECT pid, query, state, extract(epoch FROM xact_start)::float8 AS xact, "
             "extract(epoch FROM query_start)::float8 AS started FROM pg_stat_activity "
             "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
# a backend caught inside a transaction is read again up to this many times while the transaction lasts
# (a read takes a fraction of a millisecond; an OLTP transaction a millisecond or a few)
FOLLOW = 10
_IN_TRANSACTION = ("active", "idle in transaction")


def _bounds(text: str | None) -> tuple[float, float] | None:
    """The first and last of pg_stats' histogram bounds (an array's text).

    >>> _bounds("{1,2017,3999,200000}")
    (1.0, 200000.0)
    >>> _bounds(None) is None, _bounds("{a,b}") is None
    (True, True)
    """
    if not text or not text.startswith("{"):
        return None
    items = text.strip("{}").split(",")
    try:
        return float(items[0]), float(items[-1])
    except ValueError:
        return None


def sent_literals(with_literals: int, with_params: int) -> bool:
    """Whether the clients sent values in the text, from the executions
    pg_stat_activity showed with literals and with $n parameters; none of
    either (a quiet window: idle backends show their last BEGIN or END) is
    no evidence of literals, and the twin prepares.

    >>> sent_literals(5, 1), sent_literals(0, 3), sent_literals(0, 0)
    (True, False, False)
    """
    return with_literals > 0 and with_literals >= with_params


class PostgresReader:
    engine = "postgresql"
    sample_source = "pg_stat_activity"
    order_source = "pg_stat_activity"
    # pg_stat_activity's samples catch a few statements of a transaction
    whole_transactions = False

    def __init__(self, target: Target, timeout_s: float = 5.0) -> None:
        self.target = target.describe()
        self._own = 0  # this reader's statements: each is a transaction of its own in pg_stat_database
        try:
            self._conn = pq.Connection(libpq_conninfo(libpq_params(target, timeout_s=timeout_s,
                                                                   application_name="benchtop-capture")))
        except pq.PqError as exc:
            raise CaptureSourceError(f"cannot connect to {self.target}: {one_line(exc)}") from None
        self._time = "total_exec_time" if self._conn.server_version >= 130000 else "total_time"
        self.version = str(self._one("SELECT current_setting('server_version') AS v")["v"])
        if not self._one("SELECT count(*) AS n FROM pg_extension WHERE extname = 'pg_stat_statements'").get("n"):
            raise CaptureSourceError(f"{self.target}: pg_stat_statements is not installed in this database "
                                     "(CREATE EXTENSION pg_stat_statements, with it in shared_preload_libraries)")
        # a text may have several entries: pg_stat_statements tells a query sent with literals (simple protocol) from
        # the same one prepared, and pg_stat_activity shows the same text for both
        self._keys: dict[str, list[str]] = {}
        self._last: dict[int, float] = {}
        self._in_txns: list[Seen] = []
        self._columns: dict[tuple[str, str], Column | None] = {}
        self._with_literals = 0
        self._with_params = 0

    def _rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        verb, _, rest = sql.partition(" ")
        self._own += 1
        try:
            return self._conn.query(f"{verb} {TAG} {rest}", params)
        except pq.PqError as exc:
            raise CaptureSourceError(f"{self.target}: {one_line(exc)}") from None

    def _one(self, sql: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rows = self._rows(sql, params)
        return rows[0] if rows else {}

    def totals(self) -> dict[str, Totals]:
        rows = self._rows(
            f"SELECT s.userid, s.queryid, s.query, s.calls, s.{self._time} AS total_ms, s.rows "
            "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()")
        out = {}
        for r in rows:
            text = str(r["query"] or "")
            if not text or TAG in text or _MONITOR_TAG in text:
                continue
            key = f"{r['userid']}/{r['queryid']}"
            keys = self._keys.setdefault(folded(text), [])
            if key not in keys:
                keys.append(key)
            out[key] = Totals(text, int(r["calls"]), float(r["total_ms"] or 0), int(r["rows"] or 0))
        return out

    def samples(self) -> list[tuple[str, list[str]]]:
        out: list[tuple[str, list[str]]] = []
        rows = self._rows(_ACTIVITY)
        for _ in range(FOLLOW):
            inside = {int(r["pid"]): r["xact"] for r in rows if r["state"] in _IN_TRANSACTION and r["xact"]}
            out += self._take(rows)
            if not inside:
                break
            rows = [r for r in self._rows(f"{_ACTIVITY} AND pid IN ({', '.join(str(p) for p in inside)})")
                    if r["xact"] == inside[int(r["pid"])]]
        return out

    def _take(self, rows: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
        """The executions in `rows` not seen before, as (statement key, values);
        those inside a transaction kept for its order."""
        out = []
        for r in rows:
            text = str(r["query"] or "")
            pid = int(r["pid"])
            started = r["started"]
            if not text or started is None or self._last.get(pid) == started:
                continue  # the same execution seen again, or none yet
            self._last[pid] = started
            normalized, values = with_numbered_params(text)
            keys = self._keys.get(folded(normalized), [])
            if not keys:
                continue
            if values:
                self._with_literals += 1
            elif "$1" in text:
                self._with_params += 1
            inside = r["state"] in _IN_TRANSACTION and r["xact"]
            for key in keys:
                # each entry of the text: the window keeps those that ran
                if values:
                    out.append((key, literal_values(text)))
                if inside:
                    self._in_txns.append(Seen(f"{pid}/{r['xact']}", 1000.0 * (started - r["xact"]), key,
                                              tuple(literal_values(text)) if values else ()))
        return out

    def in_transactions(self) -> list[Seen]:
        return self._in_txns

    def commits(self) -> int | None:
        """The database's committed transactions so far, this reader's own left out.

        pg_stat_statements keeps no BEGIN or COMMIT sent over the extended
        protocol (prepared statements); this count stands in for them.  Each
        backend adds its figures at most once a second, so over a short window
        it is rough.  This reader's own are flushed first (PostgreSQL 15 and
        later): a hundred looks a second, a second late, would be counted out
        without having been counted in."""
        if self._conn.server_version >= 150000:
            self._rows("SELECT pg_stat_force_next_flush()")
        got = self._one("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int(got["xact_commit"]) - self._own if got.get("xact_commit") is not None else None

    def notes(self) -> list[str]:
        return []

    def literals(self) -> bool:
        return sent_literals(self._with_literals, self._with_params)

    def column(self, table: str, name: str) -> Column | None:
        if (table, name) not in self._columns:
            self._columns[(table, name)] = self._read_column(table, name)
        return self._columns[(table, name)]

    def _read_column(self, table: str, name: str) -> Column | None:
        info = self._one(
            "SELECT data_type, character_maximum_length AS length FROM information_schema.columns "
            "WHERE table_schema = ANY (current_schemas(false)) AND table_name = %(t)s AND column_name = %(c)s",
            {"t": table, "c": name})
        if not info:
            return None
        if str(info["data_type"]) not in _NUMERIC:
            return Column(table, name, False, length=int(info["length"] or 0))
        stats = self._one(
            "SELECT histogram_bounds::text AS bounds FROM pg_stats "
            "WHERE schemaname = ANY (current_schemas(false)) AND tablename = %(t)s AND attname = %(c)s",
            {"t": table, "c": name})
        got = _bounds(stats.get("bounds"))
        return Column(table, name, True, got[0] if got else None, got[1] if got else None)

    def close(self) -> None:
        self._conn.close()
