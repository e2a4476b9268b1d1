# -*- coding: utf-8 -*-
"""tools/chaos.py: its section of bench/results.md is replaced, the rest kept; bad arguments refused first."""

import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import chaos  # noqa: E402


def test_record_replaces_its_own_section_and_keeps_the_bench_figures(tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# site.yml on the simulated two-Spark fleet\n\n| run | wall time |\n|---|---|\n| no-op-rerun | 97.7 s |\n")
    chaos.record(["| fault | time to recovery | what was checked |", "|---|---|---|", "| head-kill | 56 s | x |"], str(results))
    chaos.record(["| fault | time to recovery | what was checked |", "|---|---|---|", "| head-kill | 50 s | y |"], str(results))
    text = results.read_text()
    assert "| no-op-rerun | 97.7 s |" in text
    assert text.count(chaos.SECTION) == 1
    assert "| head-kill | 50 s | y |" in text and "56 s" not in text


def test_an_unknown_fault_is_refused_before_anything_happens():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "chaos.py"), "--faults", "head-kill,meteor"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown fault(s) meteor" in proc.stderr

