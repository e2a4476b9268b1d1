# -*- coding: utf-8 -*-
"""tools/bench_engines.py: the recap it judges a no-op by, the variants it runs, and the profile's kinds of work."""

import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench_engines  # noqa: E402

RECAP = """PLAY RECAP *********************************************************************
localhost                  : ok=1    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
spark-1                    : ok=222  changed=0    unreachable=0    failed=0    skipped=143  rescued=0    ignored=0
spark-2                    : ok=205  changed=1    unreachable=0    failed=0    skipped=144  rescued=0    ignored=0
"""


def test_recap_reads_ok_changed_and_skipped_per_host():
    counts = bench_engines.recap(RECAP)
    assert counts["spark-1"] == {"ok": 222, "changed": 0, "skipped": 143}
    assert counts["spark-2"]["changed"] == 1  # a run like this one is refused as a no-op


def test_the_cold_variant_is_the_configured_callbacks_without_warm_plugins():
    env, extra = bench_engines.variants()["ssh-cold"]
    names = env["ANSIBLE_CALLBACKS_ENABLED"].split(",")
    assert "sparkfleet.gb10.warm_plugins" not in names and "sparkfleet.gb10.fleet_table" in names
    assert extra == []
    # docker exec is the same fleet under another connection, named on the command line
    docker = bench_engines.variants()["docker"][1]
    assert docker[:3] == ["-i", "inventories/sim", "-i"] and docker[3].endswith("tests/sim/docker-connection.yml")


def test_profile_table_sorts_kinds_by_share_and_tells_controller_from_workers(tmp_path):
    main = 'process 1:"ansible-playbook site.yml";StrategyModule.run (linear.py:1)'
    worker = main + ';process 2:"ansible-playbook site.yml";TaskExecutor.run (task_executor.py:1)'
    raw = tmp_path / "noop.raw"
    raw.write_text("\n".join([
        main + ";VariableManager.get_vars (manager.py:1) 10",
        worker + ";TemplateEngine.template (_engine.py:1);TemplateEngine._compile_template (_engine.py:2) 30",
        worker + ";TemplateEngine.template (_engine.py:1) 20",
        worker + ";ssh.Connection.exec_command (ssh.py:1) 40",
    ]) + "\n")
    rows, total = bench_engines.profile_table(str(raw))
    assert total == 100
    assert rows[2] == "| connection (ssh, docker exec) | 0.0% | 40.0% | 40.0% |"
    # compiling wins over rendering for a stack that does both
    assert rows[3] == "| templating: compiling | 0.0% | 30.0% | 30.0% |"
    assert rows[4] == "| templating: rendering | 0.0% | 20.0% | 20.0% |"
    assert rows[5] == "| variables (get_vars) | 10.0% | 0.0% | 10.0% |"


def test_profile_table_reads_real_py_spy_stacks():
    # One real stack of each kind (tests/fixtures/pyspy): py-spy's frame names must keep matching the markers.
    rows, total = bench_engines.profile_table(os.path.join(REPO, "tests", "fixtures", "pyspy", "noop-rerun.raw"))
    assert total == 16
    kinds = {row.split(" | ")[0][2:]: row for row in rows[2:]}
    for kind in ("variables (get_vars)", "forking a worker per task and host", "templating: compiling",
                 "templating: rendering", "module payload (AnsiballZ)", "connection (ssh, docker exec)",
                 "results: queue and polling", "plugin loading (settings from docs, filter files)"):
        assert kind in kinds, rows
    assert kinds["variables (get_vars)"].endswith("| 6.2% | 0.0% | 6.2% |")  # 1 of 16, in the controller only
