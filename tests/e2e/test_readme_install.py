"""The README's report line works in a venv built by the README's first
command (`python3 -m venv /opt/benchtop && /opt/benchtop/bin/pip install .`).

That command would compile the engine and download every dependency again
(minutes, and the network) on each CI run.  This test builds the same venv
from what is already here instead: a fresh `python -m venv`, into which go
benchtop and exactly the distributions `pip install .` brings - the closure
of setup.cfg's install_requires, as installed in the test venv - and
nothing else (no test extras, no user site, no PYTHONPATH: the new venv's
Python runs isolated, -I).  A plot dependency missing from install_requires
fails here as it failed for the user; `../shared/checks/first-ten-minutes`
does the real `pip install .`."""

from __future__ import annotations

import configparser
import importlib.metadata as md
import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.e2e.conftest import ROOT, run_benchtop


def install_requires() -> list[Requirement]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    return [Requirement(line.strip()) for line in lines if line.strip() and not line.strip().startswith("#")]


def closure(requirements: list[Requirement]) -> dict[str, md.Distribution]:
    """Every distribution those requirements pull in, as installed here."""
    found: dict[str, md.Distribution] = {}
    todo = list(requirements)
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in found:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            raise AssertionError(f"{req.name} (needed by `pip install .`) is not installed in the test venv") from None
        found[name] = dist
        todo += [Requirement(r) for r in dist.requires or ()]
    return found


def make_readme_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    site = Path(subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    linked: set[str] = set()
    for dist in closure(install_requires()).values():
        for f in dist.files or ():
            top = f.parts[0]
            if top == ".." or top in linked or top.endswith(".pth"):
                continue  # scripts outside site-packages; no path hooks from elsewhere
            linked.add(top)
            os.symlink(Path(str(dist.locate_file(top))).resolve(), site / top)
    # benchtop itself as the install puts it: the package, its built engine, its workloads
    os.symlink(ROOT / "benchtop", site / "benchtop")
    return python


def test_readme_report_line_in_the_readme_install(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "/opt/benchtop/bin/pip install . &&" in readme  # the first command: no extras
    line = re.search(r"^ +(benchtop report \S+ \S+ --html (\S+) --png (\S+))", readme, re.M)
    assert line, "the README's report line"

    # a run as the README's first command leaves it: no --out, saved, its folder printed
    runs = tmp_path / "runs"
    done = run_benchtop("--headless", "--engine", "null", "--rate", "200", "--time", "2",
                        env={"BENCHTOP_RESULTS": str(runs)})
    assert done.returncode == 0, done.stderr
    folder = Path(re.search(r"^results: (.+)$", done.stdout, re.M).group(1))

    python = make_readme_venv(tmp_path / "venv")
    assert subprocess.run([str(python), "-I", "-c", "import hypothesis"], capture_output=True).returncode != 0
    html, png = tmp_path / "report.html", tmp_path / "plots"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([str(python), "-I", "-m", "benchtop", "report", str(folder), "--html", str(html), "--png",
                        str(png)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert {"latency_cdf.png", "latency_histogram.png", "throughput.png"} <= {p.name for p in png.iterdir()}
    assert html.read_text().count("data:image/png;base64,") >= 4
