"""Keep passwords out of the process list: a password given as a flag is
overwritten in the process's own argv memory at start, as the mysql client
does, so `ps` and /proc/PID/cmdline no longer show it."""

from __future__ import annotations

import ctypes
import sys

SECRET_FLAGS = ("--mysql-password", "--pgsql-password", "--password")


def secret_spans(args: list[str]) -> list[tuple[int, int]]:
    """(argv index, offset) of every secret value: '--flag=value' or '--flag value',
    and the password part of a URL DSN.

    >>> secret_spans(["x", "--mysql-password=pw", "--pgsql-password", "s", "--dsn", "mysql://u:p@h/db"])
    [(1, 17), (3, 0), (5, 10)]
    """
    spans = []
    for i, a in enumerate(args):
        for flag in SECRET_FLAGS:
            if a.startswith(flag + "="):
                spans.append((i, len(flag) + 1))
            elif a == flag and i + 1 < len(args):
                spans.append((i + 1, 0))
        if "://" in a and "@" in a:
            scheme_end = a.index("://") + 3
            cred = a[scheme_end:a.rindex("@")]
            if ":" in cred:
                spans.append((i, scheme_end + cred.index(":") + 1))
    return spans


def scrub_argv() -> int:
    """Overwrite secrets in the C-level argv with 'x'; returns how many were
    scrubbed.  Python's sys.argv keeps the values for the parser."""
    try:
        argc = ctypes.c_int()
        argv = ctypes.POINTER(ctypes.c_char_p)()
        ctypes.pythonapi.Py_GetArgcArgv(ctypes.byref(argc), ctypes.byref(argv))
    except (AttributeError, OSError, ValueError):
        return 0
    # Py_GetArgcArgv hands back wchar_t copies; the bytes `ps` reads sit in the
    # original argv block, which /proc/self/cmdline tells us how to find.
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return 0
    words = raw.split(b"\0")
    if words and words[-1] == b"":
        words.pop()
    args = [w.decode(errors="replace") for w in words]
    spans = secret_spans(args)
    if not spans:
        return 0
    try:
        libc = ctypes.CDLL(None)
        environ_ptr = ctypes.c_void_p.in_dll(libc, "environ")
    except (OSError, ValueError):
        return 0
    # argv strings are laid out just before the environment block; the first
    # environment string's address minus the cmdline length is argv[0].
    env0 = ctypes.cast(environ_ptr.value, ctypes.POINTER(ctypes.c_void_p))[0] if environ_ptr.value else None
    if not env0:
        return 0
    base = env0 - len(raw)
    if ctypes.string_at(base, len(raw)) != raw:
        return 0
    offsets = []
    pos = 0
    for w in words:
        offsets.append(pos)
        pos += len(w) + 1
    for idx, off in spans:
        word = words[idx]
        n = len(word) - off
        if word[off:].find(b"@") >= 0 and "://" in args[idx]:
            n = word.rindex(b"@") - off
        ctypes.memset(base + offsets[idx] + off, ord("x"), max(0, n))
    return len(spans)


if __name__ == "__main__":  # pragma: no cover - manual check
    print(scrub_argv(), open("/proc/self/cmdline", "rb").read(), sys.argv)
