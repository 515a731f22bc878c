"""Panels that code outside their source reads, with their fields, defined
once: readers get a typed object (attribute access the type checker holds
to these names), never a mapping whose keys each reader spells.  A field a
recording made by an older benchtop lacks reads as None, and the panel
stored in snapshots and recordings is the same plain dict as ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final

INNODB: Final = "innodb"  # MySQL/MariaDB; Missing when the server has no InnoDB


@dataclass(frozen=True, slots=True)
class InnoDBPanel:
    lsn: float | None = None
    checkpoint_lsn: float | None = None
    checkpoint_age_bytes: float | None = None
    checkpoint_age_pct: float | None = None  # of the redo capacity: async flushing starts near 7/8
    redo_capacity_bytes: float | None = None
    dirty_pages_pct: float | None = None
    pages_flushed_per_s: float | None = None
    redo_bytes_per_s: float | None = None
    buffer_pool_hit_ratio: float | None = None  # over the last interval
    buffer_pool_hit_ratio_total: float | None = None  # since the server started
    history_list_length: int | None = None
    row_lock_waits_per_s: float | None = None
    # sessions waiting on row locks, on average over the interval (Innodb_row_lock_time's ms per second / 1000)
    row_lock_waiting: float | None = None

    @classmethod
    def of(cls, panels: Mapping[str, Any]) -> InnoDBPanel | None:
        """The InnoDB panel among a snapshot's (or a recorded snapshot's)
        panels; None when it is Missing or absent.

        >>> InnoDBPanel.of({"innodb": {"checkpoint_age_pct": 12.5}}).checkpoint_age_pct
        12.5
        >>> InnoDBPanel.of({"innodb": {"lsn": 1}}).dirty_pages_pct is None, InnoDBPanel.of({}) is None
        (True, True)
        """
        value = panels.get(INNODB)
        if not isinstance(value, Mapping):
            return None
        return cls(**{f.name: value.get(f.name) for f in fields(cls)})

    def as_panel(self) -> dict[str, Any]:
        """The panel as snapshots and recordings hold it."""
        return asdict(self)
