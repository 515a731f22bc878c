"""The workload compiler never fails with anything but a one-line
WorkloadError naming the file, whatever the file holds."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchtop.workload import WorkloadError, load_program

WORDS = ["set", "exec", "read", "write", "other", "begin", "commit", "loop", "if", "unless", "end", "rollback",
         "sleep", "x", "$s", "=", "rand(1, 10)", "uniform(a, b)", "str(c)", ":x", ":$s", "{t}", "t", "->", ":",
         "SELECT", "1", "+", "-", "*", "nurand(1023, 1, 3000)", "[mysql]", "[sqlite]", "(", ")", "'", "\"", "#"]

line = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
script = st.lists(line, min_size=0, max_size=12).map("\n".join)
header = st.sampled_from(["", "[options]\ntables = 1\nx = 2\n", "[strings]\nc = '###-@@@'\n", "base = 'nope'\n",
                          "[options]\ntables = 'many'\n", "name = 3\n"])


def _write(tmp: Path, text: str) -> Path:
    f = tmp / "fuzz.toml"
    f.write_text(text)
    return f


def _check(f: Path, engine: str) -> None:
    try:
        load_program(str(f), engine)
    except WorkloadError as exc:
        msg = str(exc)
        assert msg.startswith(str(f)) and "\n" not in msg, msg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=header, body=script, engine=st.sampled_from(["mysql", "postgresql", "sqlite", "null"]))
def test_scripts_compile_or_fail_in_one_line(tmp_path: Path, head: str, body: str, engine: str) -> None:
    body = body.replace("'''", "")
    _check(_write(tmp_path, f"{head}\n[[transaction]]\nname = 'fz'\nscript = '''\n{body}\n'''\n"), engine)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_arbitrary_text_fails_in_one_line(tmp_path: Path, text: str) -> None:
    _check(_write(tmp_path, text), "sqlite")
