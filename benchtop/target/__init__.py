"""What benchtop connects to: targets named by DSNs and options, their
passwords kept out of sight, the connection arguments every client library
gets, and the instrumentation benchtop may toggle there (and restores)."""

from benchtop.target.dsn import (
    DEFAULT_PORTS,
    KINDS,
    Target,
    TargetError,
    fill_defaults,
    parse_dsn,
)

__all__ = ["DEFAULT_PORTS", "KINDS", "Target", "TargetError", "fill_defaults", "parse_dsn"]
