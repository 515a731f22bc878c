"""What the controller asks of a load host, as typed requests: a knob, a
step of the lifecycle, or a reading.  They cross two hops (the controller
to the node's agent over Ray, the agent to the host over its socket) as
values, and `deliver` is the one place that turns a request into a call on
the host, so a misspelt knob is a type error, not a name looked up at run
time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Start:
    pass


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Join:
    timeout: float


@dataclass(frozen=True, slots=True)
class AbortIO:
    pass


@dataclass(frozen=True, slots=True)
class Close:
    pass


@dataclass(frozen=True, slots=True)
class SetThreads:
    threads: int


@dataclass(frozen=True, slots=True)
class SetRate:
    rate: float


@dataclass(frozen=True, slots=True)
class SetPaused:
    paused: bool


@dataclass(frozen=True, slots=True)
class Read:
    pass


Request = Start | Stop | Join | AbortIO | Close | SetThreads | SetRate | SetPaused | Read


class Host(Protocol):
    """What a load host answers (benchtop.cluster.loadhost.LoadHost)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float) -> bool: ...
    def abort_io(self) -> int: ...
    def close(self) -> None: ...
    def set_threads(self, n: int) -> float: ...
    def set_rate(self, rate: float) -> float: ...
    def set_paused(self, paused: bool) -> float: ...
    def reading(self) -> Any: ...


def deliver(host: Host, request: Request) -> Any:
    """`request` carried out on `host`; its value goes back to the controller."""
    match request:
        case Start():
            return host.start()
        case Stop():
            return host.stop()
        case Join(timeout):
            return host.join(timeout)
        case AbortIO():
            return host.abort_io()
        case Close():
            return host.close()
        case SetThreads(threads):
            return host.set_threads(threads)
        case SetRate(rate):
            return host.set_rate(rate)
        case SetPaused(paused):
            return host.set_paused(paused)
        case Read():
            return host.reading()
    raise TypeError(f"not a load host request: {request!r}")
