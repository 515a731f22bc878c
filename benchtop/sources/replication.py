"""Replication as each server reports it, into the panels of
benchtop.sources.fields: a MySQL/MariaDB replica's channels (both servers'
spellings of SHOW REPLICA STATUS), a PostgreSQL standby's receive and replay
positions.  Pure functions; the sources run the statements."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from benchtop.sources.fields import ReplicaRow, StandbyPanel
from benchtop.sources.rates import to_number

ParseLsn = Callable[[Any], "int | None"]


def replica_status_statement(flavour: str, version: int) -> str:
    """The statement that lists every channel, for this server.

    >>> replica_status_statement("mariadb", 101100), replica_status_statement("mysql", 80030)
    ('SHOW ALL SLAVES STATUS', 'SHOW REPLICA STATUS')
    >>> replica_status_statement("mysql", 80018)
    'SHOW SLAVE STATUS'
    """
    if flavour == "mariadb":
        return "SHOW ALL SLAVES STATUS"
    return "SHOW REPLICA STATUS" if version >= 80022 else "SHOW SLAVE STATUS"


def _get(row: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if n in row:
            v = row[n]
            return v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else v
    return None


def replica_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Channels of SHOW ALL SLAVES STATUS (MariaDB) or SHOW REPLICA STATUS
    (MySQL 8.0.22+, Source/Replica spellings) as ReplicaRow dicts.

    >>> r = replica_rows([{"Connection_name": "", "Master_Host": "10.0.0.1", "Master_Port": 3306,
    ...   "Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes", "Seconds_Behind_Master": 3,
    ...   "Master_Log_File": "bin.000002", "Read_Master_Log_Pos": 900, "Relay_Master_Log_File": "bin.000002",
    ...   "Exec_Master_Log_Pos": 800, "Relay_Log_Space": 1200, "Gtid_IO_Pos": "0-1-7", "SQL_Delay": 0,
    ...   "Last_IO_Error": "", "Last_SQL_Error": ""}])[0]
    >>> r["primary"], r["lag_s"], r["read_pos"], r["exec_pos"], r["gtid"], r["last_error"]
    ('10.0.0.1:3306', 3.0, 'bin.000002:900', 'bin.000002:800', '0-1-7', None)
    >>> r["unapplied_bytes"], r["relay_bytes"]
    (100, 1200)
    >>> replica_rows([{"Channel_Name": "", "Source_Host": "h", "Source_Port": 3306, "Replica_IO_Running": "No",
    ...   "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": None, "Last_IO_Error": "error connecting"}])[0]["last_error"]
    'IO: error connecting'
    """
    out = []
    for row in rows:
        host, port = _get(row, "Master_Host", "Source_Host"), _get(row, "Master_Port", "Source_Port")
        read_file, read_pos = _get(row, "Master_Log_File", "Source_Log_File"), _get(row, "Read_Master_Log_Pos",
                                                                                     "Read_Source_Log_Pos")
        exec_file = _get(row, "Relay_Master_Log_File", "Relay_Source_Log_File")
        exec_pos = _get(row, "Exec_Master_Log_Pos", "Exec_Source_Log_Pos")
        errors = [f"{what}: {e}" for what, e in (("IO", _get(row, "Last_IO_Error")), ("SQL", _get(row, "Last_SQL_Error")))
                  if e]
        lag = to_number(_get(row, "Seconds_Behind_Master", "Seconds_Behind_Source"))
        relay = to_number(_get(row, "Relay_Log_Space"))
        delay = to_number(_get(row, "SQL_Delay"))
        out.append(ReplicaRow(
            channel=_get(row, "Connection_name", "Channel_Name") or "",
            primary=f"{host}:{port}" if host else None,
            io_running=_get(row, "Slave_IO_Running", "Replica_IO_Running"),
            sql_running=_get(row, "Slave_SQL_Running", "Replica_SQL_Running"),
            lag_s=float(lag) if lag is not None else None,
            io_state=_get(row, "Slave_IO_State", "Replica_IO_State") or None,
            read_pos=f"{read_file}:{read_pos}" if read_file else None,
            exec_pos=f"{exec_file}:{exec_pos}" if exec_file else None,
            relay_bytes=int(relay) if relay is not None else None,
            unapplied_bytes=_gap(read_file, read_pos, exec_file, exec_pos),
            gtid=_get(row, "Gtid_IO_Pos", "Retrieved_Gtid_Set") or None,
            sql_delay_s=float(delay) if delay is not None else None,
            last_error="; ".join(errors) or None,
        ).as_row())
    return out


def _gap(read_file: Any, read_pos: Any, exec_file: Any, exec_pos: Any) -> int | None:
    """Bytes of the primary's binlog the replica read but has not executed:
    positions in one file subtract; across a rotation the sizes of the files
    between are unknown here, so no figure rather than a wrong one.

    >>> _gap("b.2", 900, "b.2", 800), _gap("b.3", 10, "b.2", 800), _gap("b.2", 800, "b.2", 900)
    (100, None, 0)
    """
    read, done = to_number(read_pos), to_number(exec_pos)
    if read_file is None or read_file != exec_file or read is None or done is None:
        return None
    return int(max(read - done, 0))


def standby_panel(row: Mapping[str, Any], parse_lsn: ParseLsn) -> StandbyPanel:
    """A standby's receive/replay positions and the gap between them
    (`parse_lsn`: the PostgreSQL source's, pg_lsn text to bytes).

    >>> lsn = lambda t: int(t.split("/")[1], 16) if t else None
    >>> p = standby_panel({"in_recovery": True, "receive_lsn": "0/3000100", "replay_lsn": "0/3000000",
    ...                    "last_replay_age_s": 1.5, "receiver_status": "streaming", "sender_host": "127.0.0.1",
    ...                    "sender_port": 5432}, lsn)
    >>> p.replay_gap_bytes, p.sender
    (256.0, '127.0.0.1:5432')
    """
    receive, replay = parse_lsn(row.get("receive_lsn")), parse_lsn(row.get("replay_lsn"))
    host = row.get("sender_host")
    return StandbyPanel(
        in_recovery=bool(row.get("in_recovery")),
        receive_lsn=row.get("receive_lsn"),
        replay_lsn=row.get("replay_lsn"),
        replay_gap_bytes=float(max(receive - replay, 0)) if receive is not None and replay is not None else None,
        last_replay_age_s=to_number(row.get("last_replay_age_s")),
        receiver_status=row.get("receiver_status"),
        replay_paused=bool(row["replay_paused"]) if row.get("replay_paused") is not None else None,
        sender=f"{host}:{row.get('sender_port')}" if host else None,
    )
