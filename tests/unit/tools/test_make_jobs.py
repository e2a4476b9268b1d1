# -*- coding: utf-8 -*-
"""tools/make_jobs.py: `make test`'s checks, JOBS at a time through molecule_jobs' queue, each log printed whole, a
failed target named with where it stopped. The targets are make targets of a throwaway Makefile."""

import io
import os
import re
import sys
from contextlib import redirect_stdout

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import make_jobs  # noqa: E402


def test_every_check_step_of_the_makefile_has_a_typical_time():
    with open(os.path.join(REPO, "Makefile")) as handle:
        steps = re.search(r"^CHECK_STEPS\s*:=\s*(.+)$", handle.read(), re.M).group(1).split()
    assert steps and sorted(make_jobs.TYPICAL_SECONDS) == sorted(steps)


def test_targets_run_side_by_side_and_a_failure_is_named(tmp_path, monkeypatch):
    (tmp_path / "Makefile").write_text("ok:\n\t@echo fine\nbad:\n\t@echo broken here; exit 3\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(make_jobs, "LOGS", str(tmp_path / "logs"))
    monkeypatch.setattr(make_jobs.molecule_jobs, "TOP", str(tmp_path))
    out = io.StringIO()
    with redirect_stdout(out):
        rc = make_jobs.main(["--jobs", "2", "ok", "bad"])
    text = out.getvalue()
    assert rc == 1
    assert "| ok | passed |" in text and "| bad | FAILED |" in text
    assert "=== where bad stopped (logs/bad.log):" in text and "broken here" in text.split("=== where bad")[1]
    assert (tmp_path / "logs" / "ok.log").read_text().strip() == "fine"
