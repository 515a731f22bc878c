"""Processes on this host, from /proc: which process listens on a TCP port
(the local server under test), and the CPU and memory of it and its
children (PostgreSQL's backends), as `ps`/`pidstat` would show them.

Everything here reads world-readable files (/proc/PID/stat, /status,
/proc/net/tcp) except the socket-to-process search, which needs to see the
server's file descriptors (root, or the server's own user).
"""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column
# Command names of a database's processes, and of a pooler's or a proxy's in front of one.
DATABASES = frozenset({"postgres", "postmaster", "mysqld", "mariadbd"})
POOLERS = frozenset({"pgbouncer", "proxysql"})


def clock_ticks() -> int:
    """Kernel clock ticks per second (the unit of /proc's CPU times)."""
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return 100


@dataclass(frozen=True, slots=True)
class ProcessReading:
    """CPU and memory of a process tree at one instant."""

    pids: int  # processes counted
    cpu_s: float  # user+sys of the live tree, plus the children the root has reaped
    rss_bytes: int | None  # private memory of every process + shared memory counted once (None: not read)


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """Inodes of the sockets listening on `port` (IPv4 and IPv6)."""
    if proc == Path("/proc"):
        found = _diag_listeners(port)
        if found is not None:
            return found
    out: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            text = (proc / "net" / name).read_text()
        except OSError:
            continue
        out |= parse_listeners(text, port)
    return out


_SOCK_DIAG_BY_FAMILY = 20
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_TCP_LISTEN_STATE = 1 << 10


def _diag_listeners(port: int) -> set[str] | None:
    """The kernel's listening TCP sockets on `port`, asked through netlink
    (sock_diag, as `ss -lt` asks): /proc/net/tcp walks every hash bucket of
    the established table whatever it holds, 3.5 ms a file here, where the
    listeners alone take 0.1 ms.  None when netlink will not say."""
    out: set[str] = set()
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 4) as s:  # NETLINK_SOCK_DIAG
            s.settimeout(1.0)
            for family in (socket.AF_INET, socket.AF_INET6):
                # inet_diag_req_v2 (family, protocol, extensions, states) and an empty socket id
                req = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, _TCP_LISTEN_STATE) + bytes(48)
                s.send(struct.pack("=IHHII", 16 + len(req), _SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + req)  # dump
                if not _diag_replies(s, port, out):
                    return None
    except (OSError, struct.error):
        return None
    return out


def _diag_replies(s: socket.socket, port: int, out: set[str]) -> bool:
    """Reads one dump's inet_diag_msg replies, adding the inodes of those on
    `port`; False when the kernel answered with an error."""
    while True:
        data = s.recv(65536)
        if not data:
            return False
        off = 0
        while off + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, off)
            if kind == _NLMSG_DONE:
                return True
            if kind == _NLMSG_ERROR or length < 16:
                return False
            # after the 16-byte header: family, state, timer, retransmits, then the socket id
            # (source port big-endian first, 48 bytes), expires, queues, uid, inode
            if struct.unpack_from(">H", data, off + 20)[0] == port:
                out.add(str(struct.unpack_from("=I", data, off + 16 + 68)[0]))
            off += (length + 3) & ~3


def parse_listeners(text: str, port: int) -> set[str]:
    """
    >>> parse_listeners("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\\n"
    ...                 "   0: 0100007F:3402 00000000:0000 0A 00000000:00000000 00:00000000 00000000  106        0 4242 1\\n"
    ...                 "   1: 0100007F:3402 0100007F:C350 01 00000000:00000000 00:00000000 00000000  106        0 4243 1\\n", 13314)
    {'4242'}
    """
    out = set()
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 10 or parts[3] != _LISTEN:
            continue
        try:
            if int(parts[1].rsplit(":", 1)[1], 16) == port:
                out.add(parts[9])
        except (IndexError, ValueError):
            continue
    return out


def listener_pid(port: int, proc: Path = Path("/proc")) -> int | None:
    """The process listening on TCP `port` on this host; None when there is
    none or its descriptors cannot be read.  A database's or a pooler's
    processes are searched first: every process's descriptors were 14 ms of
    the run's start here, and a run asks twice."""
    inodes = listening_inodes(port, proc)
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    pids = [entry.name for entry in os.scandir(proc) if entry.name.isdigit()]
    serving = DATABASES | POOLERS
    likely = [pid for pid in pids if process_name(int(pid), proc) in serving]
    first = set(likely)
    for pid in likely + [pid for pid in pids if pid not in first]:
        if _holds(proc / pid / "fd", wanted):
            return int(pid)
    return None


def _holds(fd_dir: Path, wanted: set[str]) -> bool:
    """Whether one of a process's descriptors is one of `wanted`."""
    try:
        fds = list(os.scandir(fd_dir))
    except OSError:  # gone, or not ours to read
        return False
    for fd in fds:
        try:
            if os.readlink(fd.path) in wanted:
                return True
        except OSError:  # closed since the listing: the process's other descriptors still count
            continue
    return False


def pid_from_file(path: str | None) -> int | None:
    """A server's pid file (MySQL's @@pid_file), when readable."""
    if not path:
        return None
    try:
        text = Path(path).read_text().split()
    except OSError:
        return None
    return int(text[0]) if text and text[0].isdigit() else None


def read_bytes(path: str) -> bytes:
    """A /proc file's bytes through os.open/os.read: the text layer of open()
    adds an fstat, an ioctl and an lseek to every file, and a PostgreSQL of
    hundreds of backends means thousands of these files a second, whose CPU
    the run's client-CPU figure counts."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        out = os.read(fd, 65536)
        while True:  # until EOF: a seq file may return one record at a time
            more = os.read(fd, 65536)
            if not more:
                return out
            out += more
    finally:
        os.close(fd)


_PAGE = os.sysconf("SC_PAGE_SIZE")


def memory_shares(statm: bytes, page: int = _PAGE) -> tuple[int, int]:
    """One process's anonymous and shared memory (bytes) from its
    /proc/PID/statm: resident pages less the shared ones (file-mapped and
    shared memory), and the shared ones.  statm is a line of seven numbers
    where status is some fifty lines: a fifth of the kernel's time to write
    (measured beside 261 PostgreSQL backends: 0.8 ms against 4.3 ms a pass).

    >>> memory_shares(b"93143 11982 11397 1322 0 430 0\\n", 4096)
    (2396160, 46682112)
    """
    f = statm.split()
    resident, shared = int(f[1]), int(f[2])
    return (resident - shared) * page, shared * page


def tree_rss(shares: Iterable[tuple[int, int]]) -> int:
    """A process tree's memory from each process's memory_shares: every
    anonymous part, plus the largest shared part once (PostgreSQL's backends
    all map the same shared buffers and binary).

    >>> tree_rss([(10, 580), (30, 490)])
    620
    """
    anon = shared = 0
    for a, s in shares:
        anon, shared = anon + a, max(shared, s)
    return anon + shared


def process_name(pid: int | None, proc: Path = Path("/proc")) -> str | None:
    """The command name of `pid` (/proc/PID/comm: mariadbd, postgres, pgbouncer)."""
    if pid is None:
        return None
    try:
        return read_bytes(f"{proc}/{pid}/comm").decode(errors="replace").strip() or None
    except OSError:  # gone
        return None


def self_cpu_s() -> float:
    """User+system CPU seconds of this process (all its threads)."""
    t = os.times()
    return t.user + t.system
