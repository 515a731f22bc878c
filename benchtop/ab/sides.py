"""A side of a comparison as the command line gives it: `--a "OPTIONS"`,
benchtop run options (`--point-selects 14`, `--threads 8`, `--dsn ...`)
and server settings (`--set NAME=VALUE`, applied around the side's runs).
The run options are checked by the run's own parser, by the caller."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from benchtop.errors import UsageError
from benchtop.target.dsn import redact_dsn
from benchtop.target.secrets import secret_spans

# options the comparison owns: a side that set them would not be measured as the other is
_OWNED = {"--out": "the comparison's folder is ab's --out", "--time": "every run lasts --round-time",
          "--json": "the figures are in ab.json", "--events": "every run lasts --round-time"}
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+\.\d*(e-?\d+)?")


@dataclass(frozen=True, slots=True)
class Side:
    """`name` is "a" or "b"; `argv` its run options; `settings` its server
    settings in the order given."""

    name: str
    text: str
    argv: tuple[str, ...]
    settings: tuple[tuple[str, int | float | str], ...]

    @property
    def label(self) -> str:
        return self.name.upper()

    @property
    def shown(self) -> str:
        """The side's options as printed and kept in ab.json: no password.

        >>> Side("b", "--dsn postgresql://u:pw@h/db --threads 2", (), ()).shown
        '--dsn postgresql://u:***@h/db --threads 2'
        """
        words = shlex.split(self.text)  # parse_side has split it already
        for i, offset in secret_spans(words):
            words[i] = redact_dsn(words[i]) if "://" in words[i] else words[i][:offset] + "***"
        return " ".join(words)

    def to_dict(self) -> dict[str, object]:
        return {"options": self.shown, "settings": dict(self.settings)}


def setting_value(text: str) -> int | float | str:
    """A --set value as SET GLOBAL / ALTER SYSTEM take it: numbers unquoted.

    >>> setting_value("0"), setting_value("0.5"), setting_value("4G"), setting_value("off")
    (0, 0.5, '4G', 'off')
    """
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def parse_side(name: str, text: str) -> Side:
    """The side's options split into run options and settings; UsageError
    (one line naming the side) for a malformed --set or an option the
    comparison owns.

    >>> s = parse_side("b", "--point-selects 14 --set innodb_flush_log_at_trx_commit=0")
    >>> s.argv, s.settings
    (('--point-selects', '14'), (('innodb_flush_log_at_trx_commit', 0),))
    >>> parse_side("a", "--set sync_binlog")
    Traceback (most recent call last):
    benchtop.errors.UsageError: --a: --set takes NAME=VALUE, not 'sync_binlog'
    """
    flag = f"--{name}"
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}: {text!r}") from None
    argv: list[str] = []
    settings: dict[str, int | float | str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--set" or word.startswith("--set="):
            if word == "--set":
                if i + 1 >= len(words):
                    raise UsageError(f"{flag}: --set needs NAME=VALUE")
                i += 1
                spec = words[i]
            else:
                spec = word[len("--set="):]
            key, eq, value = spec.partition("=")
            if not eq or not key or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", key):
                raise UsageError(f"{flag}: --set takes NAME=VALUE, not {spec!r}")
            settings[key] = setting_value(value)
        else:
            option = word.split("=", 1)[0]
            if option in _OWNED:
                raise UsageError(f"{flag}: {option} is not a side's option ({_OWNED[option]})")
            argv.append(word)
        i += 1
    return Side(name, text, tuple(argv), tuple(settings.items()))


def owned_option(argv: list[str]) -> str | None:
    """The first option of the shared command line that the comparison
    owns, with why, e.g. '--time (every run lasts --round-time)'."""
    for word in argv:
        option = word.split("=", 1)[0]
        if option in _OWNED and option != "--out":
            return f"{option} ({_OWNED[option]})"
    return None
