"""Whether a target's server runs on this machine.

When it does, benchtop's workers and the server share the CPUs, and every
statement is a wake-up across them; workers under SCHED_IDLE let the kernel
run the server's thread on the CPU of the worker that woke it (a sync
wake-up onto a CPU running only idle-class threads), which on the 2-core
test machines cut the client's CPU per oltp_read_write transaction by a
quarter and gave the server that CPU (bench/vs_peers.py)."""

from __future__ import annotations

import ipaddress
import socket

from benchtop.target.dsn import Target


def server_on_this_host(target: Target) -> bool:
    """A Unix socket, localhost, this machine's name or an address of one of
    its interfaces; any other name counts as remote (no lookup is made)."""
    if target.socket:
        return True
    host = (target.host or "localhost").strip("[]")
    if host.lower() in ("localhost", socket.gethostname().lower()):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    # only an address of this machine can be bound to
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.bind((str(ip), 0))
        except OSError:
            return False
    return True
