# -*- coding: utf-8 -*-
"""What roles/fleet_benchmark/vars/main.yml gives on a real inventory: the endpoints and runs of each host (lists
given with -e as text read as the lists they name), the sweep's settings, and every model the play benchmarked
(hosts without results add none)."""

import os
import shutil

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters", "hosts.yml")
FILES = ["fleet_benchmark/defaults/main.yml", "fleet_benchmark/vars/main.yml"]
WHAT = ("{'models': _fleet_benchmark_models, 'endpoints': _fleet_benchmark_endpoints | map(attribute='name') | list, "
        "'runs': _fleet_benchmark_runs | map('first') | map(attribute='name') | zip(_fleet_benchmark_runs "
        "| map('last')) | list, 'settings': _fleet_benchmark_settings, 'all': _fleet_benchmark_all}")


def _inventory(tmp_path):
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True)
    shutil.copy(INVENTORY, inventory / "hosts.yml")
    (inventory / "host_vars" / "spark-3.yml").write_text("fleet_benchmark_results: [{name: qwen3-235b}]\n")
    (inventory / "host_vars" / "spark-1.yml").write_text("fleet_benchmark_results: [{name: llama-70b}, {name: x}]\n")
    return inventory


def test_each_host_runs_its_endpoints_at_each_concurrency(tmp_path, render_role_vars):
    seen = render_role_vars(_inventory(tmp_path), FILES, WHAT,
                            extra_vars={"fleet_benchmark_concurrency": "1,4", "fleet_benchmark_seed": "7"})
    assert seen["spark-1"]["runs"] == [["llama-70b", 1], ["llama-70b", 4]]
    assert seen["spark-3"]["runs"] == [["qwen3-235b", 1], ["qwen3-235b", 4]]
    assert seen["spark-2"]["endpoints"] == [] and seen["spark-2"]["runs"] == []
    assert seen["spark-1"]["settings"] == {"input_len": 256, "output_len": 128, "rounds": 4, "min_prompts": 8,
                                           "seed": 7}
    # the play's results, in its hosts' order
    for host in seen:
        assert seen[host]["all"] == [{"name": "llama-70b"}, {"name": "x"}, {"name": "qwen3-235b"}]


def test_models_named_as_text_limit_the_endpoints(tmp_path, render_role_vars):
    seen = render_role_vars(_inventory(tmp_path), FILES, WHAT,
                            extra_vars={"fleet_benchmark_models": "qwen3-235b,gone", "fleet_benchmark_concurrency": [2]})
    assert seen["spark-1"]["models"] == ["qwen3-235b", "gone"]
    assert seen["spark-1"]["endpoints"] == [] and seen["spark-3"]["endpoints"] == ["qwen3-235b"]
    assert seen["spark-3"]["runs"] == [["qwen3-235b", 2]]
