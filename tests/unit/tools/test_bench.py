# -*- coding: utf-8 -*-
"""tools/bench.py: the row's min/median and the before column taken from the previous results."""

import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench  # noqa: E402

ONE_RUN = """# site.yml on the simulated two-Spark fleet

Measured by `make bench` on 2026-11-23, 2 cores, 24 GiB.

| run | wall time | changed tasks (all hosts) | exit |
|---|---|---|---|
| first-converge | 239.2 s | 137 | 0 |
| no-op-rerun | 97.7 s | 0 | 0 |

## Model weights on the two simulated hosts

| no-op-rerun | 1.0 s | 2.0 s | 3 | 0 | - |
"""

THREE_RUNS = """Measured by `make bench` on 2026-11-24, 2 cores, 24 GiB.

| run | min | median | runs | changed tasks (all hosts, each run) | before |
|---|---|---|---|---|---|
| no-op-rerun | 60.1 s | 61.5 s | 3 | 0, 0, 0 | 97.7 s (2026-11-23) |
"""


def test_before_reads_the_one_run_table_and_ignores_later_sections(tmp_path):
    path = tmp_path / "results.md"
    path.write_text(ONE_RUN)
    assert bench.before_figure("no-op-rerun", str(path)) == "97.7 s (2026-11-23)"
    assert bench.before_figure("first-converge", str(path)) == "239.2 s (2026-11-23)"


def test_before_takes_the_median_of_a_several_run_table(tmp_path):
    path = tmp_path / "results.md"
    path.write_text(THREE_RUNS)
    assert bench.before_figure("no-op-rerun", str(path)) == "61.5 s (2026-11-24)"


def test_before_is_a_dash_without_a_previous_figure(tmp_path):
    assert bench.before_figure("no-op-rerun", str(tmp_path / "missing.md")) == "-"
    path = tmp_path / "results.md"
    path.write_text(THREE_RUNS)
    assert bench.before_figure("first-converge", str(path)) == "-"


def test_row_has_min_median_and_each_runs_changes():
    assert bench.row("no-op-rerun", [70.0, 61.0, 64.0], [0, 0, 0], "97.7 s (2026-11-23)") == \
        "| no-op-rerun | 61.0 s | 64.0 s | 3 | 0, 0, 0 | 97.7 s (2026-11-23) |"
