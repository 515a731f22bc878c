"""The local channel between a node's agent and the load hosts on its node:
one Unix socket per load host, in a directory only its user can enter.

Ray places the actors, carries calls between nodes and tells when an actor
is gone; within a node a Ray actor call costs a few milliseconds of CPU
once 16 load hosts share two cores, so a knob fanned out to every host as
Ray calls took ~120 ms.  Over these sockets a call is a write and a read:
the agent asks every host of its node at once and reads the answers as
they come.

A frame is a 4-byte length and a pickle; a request is one of
benchtop.cluster.messages' typed requests, an answer ("ok", value) or
("error", one line).  A connection carries one call
at a time; the agent keeps idle ones for the next call and opens more when
several calls are under way (a join that waits while an abort comes).
"""

from __future__ import annotations

import os
import pickle
import selectors
import shutil
import socket
import struct
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchtop.cluster.messages import Host, Request, deliver

HEADER = struct.Struct("!I")


@dataclass(frozen=True, slots=True)
class Lost:
    """What a call to a load host whose process is gone returns instead of a value."""

    reason: str


@dataclass(frozen=True, slots=True)
class Failed:
    """What a call that raised in the load host returns: the host lives on."""

    reason: str


def _frame(obj: Any) -> bytes:
    body = pickle.dumps(obj, protocol=5)
    return HEADER.pack(len(body)) + body


def _read_frame(sock: socket.socket) -> Any:
    """One whole frame from a blocking socket; EOFError when the peer closed."""
    head = _read_exactly(sock, HEADER.size)
    return pickle.loads(_read_exactly(sock, HEADER.unpack(head)[0]))


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


class HostServer:
    """A load host's end: carries out requests on `target` from a socket,
    each connection in its own thread (a join in progress does not hold up
    an abort)."""

    def __init__(self, target: Host) -> None:
        self._target = target
        self._dir = tempfile.mkdtemp(prefix="benchtop-host-")  # 0700: only this user connects
        self.path = os.path.join(self._dir, "link")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(16)
        threading.Thread(target=self._accept, name="host-link", daemon=True).start()

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # never connected or already shut
            pass
        self._sock.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), name="host-link-call", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    request = _read_frame(conn)
                except (EOFError, OSError):
                    return
                try:
                    answer: tuple[str, Any] = ("ok", deliver(self._target, request))
                except Exception as exc:  # the agent reports it; the host goes on
                    answer = ("error", f"{type(exc).__name__}: {exc}".splitlines()[0])
                try:
                    conn.sendall(_frame(answer))
                except OSError:
                    return


@dataclass
class Call:
    """One call under way to host `host` (`result` set once it has ended)."""

    host: int
    sock: socket.socket | None
    buf: bytearray = field(default_factory=bytearray)
    result: Any = None
    done: bool = False

    def end(self, result: Any) -> None:
        self.result, self.done = result, True


class HostLinks:
    """The agent's end: connections to each of its node's load hosts
    (`paths`: socket path by host number)."""

    def __init__(self, paths: dict[int, str]) -> None:
        self._paths = paths
        self._idle: dict[int, list[socket.socket]] = {i: [] for i in paths}
        self._lock = threading.Lock()

    def ask(self, host: int, request: Request) -> Call:
        with self._lock:
            sock = self._idle[host].pop() if self._idle[host] else None
        try:
            if sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(self._paths[host])
            sock.sendall(_frame(request))
        except OSError as exc:
            if sock is not None:
                sock.close()
            self._forget(host)
            return Call(host, None, result=Lost(_gone(exc)), done=True)
        return Call(host, sock)

    def collect(self, calls: list[Call], timeout: float) -> list[Call]:
        """Reads answers until every call has ended or `timeout` passed;
        the calls still under way are returned (the caller waits for them
        later, or drops them)."""
        deadline = time.monotonic() + timeout
        waiting = {c.sock: c for c in calls if not c.done and c.sock is not None}
        with selectors.DefaultSelector() as sel:
            for sock in waiting:
                sel.register(sock, selectors.EVENT_READ)
            while waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for key, _ in sel.select(left):
                    call = waiting[key.fileobj]  # type: ignore[index]
                    if self._read(call):
                        sel.unregister(key.fileobj)
                        del waiting[key.fileobj]  # type: ignore[arg-type]
        return list(waiting.values())

    def drop(self, calls: list[Call]) -> None:
        """Calls no longer waited for: their connections cannot carry another call."""
        for c in calls:
            if c.sock is not None:
                c.sock.close()
                c.sock = None

    def _read(self, call: Call) -> bool:
        """Takes what arrived for `call`; True once it has ended."""
        assert call.sock is not None
        try:
            chunk = call.sock.recv(1 << 16)
        except OSError as exc:
            chunk, why = b"", _gone(exc)
        else:
            why = "its process ended"
        if not chunk:
            call.sock.close()
            call.sock = None
            self._forget(call.host)
            call.end(Lost(why))
            return True
        call.buf += chunk
        if len(call.buf) < HEADER.size or len(call.buf) < HEADER.size + HEADER.unpack_from(call.buf)[0]:
            return False
        kind, value = pickle.loads(memoryview(call.buf)[HEADER.size:])
        with self._lock:
            self._idle[call.host].append(call.sock)
        call.sock = None
        call.end(value if kind == "ok" else Failed(value))
        return True

    def _forget(self, host: int) -> None:
        """A host whose process is gone: its socket's directory goes too (a
        killed process cannot remove it)."""
        shutil.rmtree(os.path.dirname(self._paths[host]), ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for socks in self._idle.values():
                for s in socks:
                    s.close()
                socks.clear()


def _gone(exc: OSError) -> str:
    return f"its process is gone ({exc.strerror or type(exc).__name__})"
