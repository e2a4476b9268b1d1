# -*- coding: utf-8 -*-
"""tools/bench_pair.py: a run counts as a no-op only when every host of its recap changed nothing."""

import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench_pair  # noqa: E402

RECAP = """PLAY RECAP *********************************************************************
spark-1                    : ok=206  changed=0    unreachable=0    failed=0    skipped=132  rescued=0    ignored=0
spark-2                    : ok=186  changed=%d    unreachable=0    failed=0    skipped=136  rescued=0    ignored=0
"""


def test_the_recap_gives_each_hosts_changed_count():
    assert bench_pair.changed_counts(RECAP % 0) == {"spark-1": 0, "spark-2": 0}
    assert bench_pair.changed_counts(RECAP % 3) == {"spark-1": 0, "spark-2": 3}


@pytest.mark.parametrize("rc, stdout", [(0, RECAP % 2), (2, RECAP % 0), (0, "no recap")])
def test_a_run_that_failed_changed_or_said_nothing_is_not_a_figure(monkeypatch, rc, stdout):
    class Proc:
        returncode = rc
        stderr = ""
    Proc.stdout = stdout
    monkeypatch.setattr(bench_pair.subprocess, "run", lambda *a, **k: Proc)
    with pytest.raises(SystemExit, match="not a no-op rerun"):
        bench_pair.run(REPO, "inventories/sim")
