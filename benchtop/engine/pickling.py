"""Pickling of the frozen, slotted dataclasses a cluster run ships every
interval: dataclasses' own unpickling looks up the class's fields for each
object (320 objects in a 64-host gather); constructor arguments do not."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def pickled_by_fields(cls: type[T]) -> type[T]:
    """Class decorator (below @dataclass): pickle as cls(*fields)."""
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def __reduce__(self: Any) -> tuple[Any, ...]:
        return (cls, tuple(getattr(self, n) for n in names))

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls
