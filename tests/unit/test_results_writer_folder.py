"""A results folder a run made and wrote nothing in (refused before its
load: a wrong password, missing tables) is gone again after the run; one
the user made, or one holding the run's files, stays."""

from __future__ import annotations

from benchtop.record.folder import ResultsWriter


def test_a_folder_made_for_a_run_that_wrote_nothing_is_removed(tmp_path):
    out = tmp_path / "runs" / "refused"
    ResultsWriter(out).close()
    assert not out.exists()
    assert (tmp_path / "runs").is_dir()  # only the run's own folder goes


def test_a_folder_with_the_runs_files_stays(tmp_path):
    out = tmp_path / "ran"
    w = ResultsWriter(out)
    w.write_json("config.json", {"workload": "oltp_read_only"})
    w.close()
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]


def test_an_empty_folder_the_user_made_stays(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    ResultsWriter(out).close()
    assert out.is_dir() and not any(out.iterdir())
