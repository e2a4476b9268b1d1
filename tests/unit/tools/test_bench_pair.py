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


def test_a_no_op_run_gives_its_wall_time_the_cpu_of_its_children_and_its_hosts(monkeypatch):
    """The CPU is what the child (ansible-playbook in the bench) used, read from the kernel's accounting of waited-for
    children: a child that burns about 0.3 s of CPU is counted, the controller's own (this process) is not."""
    real_run = bench_pair.subprocess.run
    burn = ("import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end:\n    pass\n"
            "print(%r)" % ((RECAP % 0) + "localhost                  : ok=1    changed=0    unreachable=0    failed=0"))

    def child(argv, **kwargs):
        assert argv[:2] == ["ansible-playbook", "site.yml"]
        kwargs.pop("cwd", None)
        return real_run([sys.executable, "-c", burn], **kwargs)
    monkeypatch.setattr(bench_pair.subprocess, "run", child)
    seconds, cpu, hosts = bench_pair.run(REPO, "inventories/sim")
    assert hosts == 2
    assert 0.25 <= cpu <= seconds + 0.5


def test_a_settling_run_may_change_things_but_must_not_fail(monkeypatch):
    class Proc:
        returncode = 0
        stderr = ""
        stdout = RECAP % 2
    monkeypatch.setattr(bench_pair.subprocess, "run", lambda *a, **k: Proc)
    assert bench_pair.run(REPO, "inventories/sim", settle=True)[2] == 2
    Proc.returncode = 2
    with pytest.raises(SystemExit, match="not a no-op rerun"):
        bench_pair.run(REPO, "inventories/sim", settle=True)
