"""The effective configuration of a run, and how a target becomes the
engine's connection settings.  `RunConfig.to_dict()` is what results folders
store: it never contains a password."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from benchtop.engine import ConnSettings
from benchtop.target import Target
from benchtop.target.connection import native_conn

ENGINE_ALIASES = {"postgres": "postgresql", "pgsql": "postgresql", "mariadb": "mysql"}
ENGINES = ("sqlite", "null", "mysql", "postgresql", "fileio")


@dataclass(frozen=True)
class RunConfig:
    engine: str = "sqlite"
    target: Target = field(default_factory=lambda: Target(kind="sqlite"))
    workload: str = "oltp_read_write"
    workload_options: dict[str, Any] = field(default_factory=dict)
    threads: int = 1
    time_s: float = 10.0
    events: int = 0
    rate: float = 0.0
    arrival: str = "uniform"
    report_interval: float = 1.0
    percentile: float = 95.0
    histogram: bool = False
    warmup_s: float = 0.0
    json: bool = False
    out: str | None = None
    headless: bool = False
    rand_type: str = "special"
    rand_spec_iter: int = 12
    rand_spec_pct: float = 1.0
    rand_spec_res: float = 75.0
    rand_pareto_h: float = 0.2
    rand_zipfian_exp: float = 0.8
    rand_seed: int = 0
    prepare_statements: bool = True
    pipeline: bool = False
    reconnect: int = 0
    ignore_errors: str = ""
    instrumentation: str | None = None
    stop_if: tuple[str, ...] = ()
    temp_db: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["target"] = self.target.to_dict()
        d["stop_if"] = list(self.stop_if)
        return d


def conn_settings(cfg: RunConfig) -> ConnSettings:
    t = cfg.target
    if cfg.engine == "sqlite":
        return ConnSettings(driver="sqlite", database=t.database)
    if cfg.engine == "null":
        return ConnSettings(driver="null")
    return ConnSettings(
        driver=cfg.engine,
        **native_conn(t, cfg.engine),
        prepare=cfg.prepare_statements,
        pipeline=cfg.pipeline,
    )


def parse_ignore_errors(spec: str) -> tuple[bool, tuple[int, ...]]:
    """sysbench's --mysql-ignore-errors: 'all', or codes (MySQL errnos or
    5-character SQLSTATEs).

    >>> parse_ignore_errors("all")
    (True, ())
    >>> parse_ignore_errors("1062,1213")
    (False, (1062, 1213))
    """
    spec = (spec or "").strip()
    if not spec or spec == "none":
        return False, ()
    if spec == "all":
        return True, ()
    codes = []
    for item in spec.split(","):
        item = item.strip()
        if item.isdigit():
            codes.append(int(item))
        elif len(item) == 5 and item.isalnum():
            v = 0
            for ch in item.upper():
                v = v * 36 + (int(ch) if ch.isdigit() else ord(ch) - ord("A") + 10)
            codes.append(v)
        else:
            raise ValueError(f"--ignore-errors: {item!r} is neither an error number nor a SQLSTATE")
    return False, tuple(codes)
