# -*- coding: utf-8 -*-
"""tools/chaos.py: its section of bench/results.md is replaced, the rest kept; bad arguments refused first."""

import os
import subprocess

import pytest
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import chaos  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import FLEET_DEFAULTS  # noqa: E402


def test_record_replaces_its_own_section_and_keeps_the_bench_figures(tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# site.yml on the simulated two-Spark fleet\n\n| run | wall time |\n|---|---|\n| no-op-rerun | 97.7 s |\n")
    chaos.record(["| head-kill | 56 s | 2026-11-22 | x |"], str(results))
    chaos.record(["| head-kill | 50 s | 2026-11-23 | y |"], str(results))
    text = results.read_text()
    assert "| no-op-rerun | 97.7 s |" in text
    assert text.count(chaos.SECTION) == 1
    assert "| head-kill | 50 s | 2026-11-23 | y |" in text and "56 s" not in text


def test_record_keeps_the_sections_after_its_own_in_place(tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# bench\n\n" + chaos.SECTION + "\n\n| fault | time to recovery | measured | what was checked |\n"
                       "|---|---|---|---|\n| head-kill | 56 s | 2026-11-22 | x |\n\n## A CPU without AVX-512\n\nkept\n")
    chaos.record(["| head-kill | 50 s | 2026-11-23 | y |"], str(results))
    text = results.read_text()
    assert text.index(chaos.SECTION) < text.index("| head-kill | 50 s |") < text.index("## A CPU without AVX-512")
    assert text.endswith("## A CPU without AVX-512\n\nkept\n") and "56 s" not in text


def test_record_keeps_the_rows_of_faults_not_run_again_in_fault_order(tmp_path):
    results = tmp_path / "results.md"
    # A section written before the table had its date column: its rows take the section's date.
    results.write_text(chaos.SECTION + "\n\nMeasured by `make chaos` on 2026-11-20, 2 cores.\n\n"
                       "| fault | time to recovery | what was checked |\n|---|---|---|\n"
                       "| host-restart | 61 s | docker restart |\n| head-kill | 54 s | SIGKILL |\n")
    chaos.record(["| rolling-update | 180 s | 2026-11-23 | 0 failed |", "| head-kill | 40 s | 2026-11-23 | again |"],
                 str(results))
    rows = [line for line in results.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == [chaos.HEADER[0], "| head-kill | 40 s | 2026-11-23 | again |",
                    "| host-restart | 61 s | 2026-11-20 | docker restart |", "| rolling-update | 180 s | 2026-11-23 | 0 failed |"]


def test_an_unknown_fault_is_refused_before_anything_happens():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "chaos.py"), "--faults", "head-kill,meteor"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "unknown fault(s) meteor" in proc.stderr


def _models(inventory, host):
    import yaml
    with open(os.path.join(inventory, "host_vars", host + ".yml")) as handle:
        return yaml.safe_load(handle)["sparkfleet_models"]


def test_the_independent_layout_is_what_the_rolling_update_fault_expects():
    # One model per host, none spanning hosts (no nodes), the names chaos waits on.
    for host, model in chaos.INDEPENDENT_MODELS.items():
        entries = _models(chaos.INDEPENDENT, host)
        assert [e["name"] for e in entries] == [model]
        assert "nodes" not in entries[0] and entries[0]["port"] == 8000
        assert entries[0][chaos.ROLL_SETTING[0]] != chaos.ROLL_SETTING[1]


def test_the_rolled_inventory_changes_the_follower_setting_alone(tmp_path):
    copy = chaos.rolled_inventory(str(tmp_path))
    # Same directory name: vllm_service keeps the controller keys under ~/.sparkfleet/<name>/.
    assert os.path.basename(copy) == os.path.basename(chaos.INDEPENDENT)
    rolled = _models(copy, chaos.FOLLOWER)[0]
    original = _models(chaos.INDEPENDENT, chaos.FOLLOWER)[0]
    assert rolled[chaos.ROLL_SETTING[0]] == chaos.ROLL_SETTING[1]
    assert {k: v for k, v in rolled.items() if k != chaos.ROLL_SETTING[0]} == \
        {k: v for k, v in original.items() if k != chaos.ROLL_SETTING[0]}
    assert _models(copy, chaos.HEAD) == _models(chaos.INDEPENDENT, chaos.HEAD)
    # The copy stands alone: the shared group_vars are files, not links back into the repository.
    linked = os.path.join(copy, "group_vars", "all", "vllm_cpu.yml")
    assert os.path.isfile(linked) and not os.path.islink(linked)


def test_unit_names_and_ray_settings_come_from_the_role_defaults():
    import yaml
    roles = os.path.join(REPO, "roles")

    def default(role, name):
        with open(os.path.join(roles, role, "defaults", "main.yml")) as handle:
            return yaml.safe_load(handle)[name]

    assert chaos.UNIT == default("vllm_service", "vllm_service_unit_prefix") + chaos.MODEL + ".service"
    # The Ray units are named by the fleet defaults the roles' own defaults read (a unit name, not a template).
    assert chaos.RAY_HEAD == FLEET_DEFAULTS["ray_head_unit"][0] + ".service"
    assert chaos.RAY_WORKER == FLEET_DEFAULTS["ray_worker_unit"][0] + ".service"
    assert "fleet_default', 'ray_head_unit'" in default("ray", "ray_head_service_name")
    assert "fleet_default', 'ray_worker_unit'" in default("ray", "ray_worker_service_name")
    assert "{" not in chaos.RAY_HEAD + chaos.RAY_WORKER
    assert chaos.PROBE == default("fleet_health", "fleet_health_unit_name") + ".service"
    assert chaos.FIREWALL == default("fabric_firewall", "fabric_firewall_unit") + ".service"
    assert chaos.RAY_DASHBOARD_PORT == default("ray", "ray_head_ports")["dashboard"]
    assert chaos.RAY_TOKEN_FILE == FLEET_DEFAULTS["ray_auth_token_file"][0]
    assert "fleet_default', 'ray_auth_token_file'" in default("ray", "ray_auth_token_file")
    assert (chaos.FIREWALL, chaos.RAY_WORKER) in chaos.BOOT_ORDER


def test_ray_is_the_one_the_head_unit_starts(monkeypatch):
    # systemctl show's ExecStart as a simulated Spark prints it
    line = ("{ path=/srv/venvs/ray-2.60/bin/ray ; argv[]=/srv/venvs/ray-2.60/bin/ray start --head --block ; "
            "ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }")
    monkeypatch.setattr(chaos, "show", lambda host, unit, *props: {"ExecStart": line})
    assert chaos.ray_bin() == "/srv/venvs/ray-2.60/bin/ray"
    monkeypatch.setattr(chaos, "show", lambda host, unit, *props: {})
    with pytest.raises(SystemExit, match="no ExecStart path"):
        chaos.ray_bin()


def test_reachability_is_a_new_ssh_login_with_the_sims_ssh_config(monkeypatch):
    seen = []

    def run(argv, **kwargs):
        seen.append((argv, kwargs))
        if argv[-1] == "sleep 60":
            raise subprocess.TimeoutExpired(argv, kwargs["timeout"])
        return subprocess.CompletedProcess(argv, 0, "active\n", "")

    monkeypatch.setattr(chaos.subprocess, "run", run)
    assert chaos.ssh(chaos.FOLLOWER, "true").returncode == 0
    argv, kwargs = seen[0]
    # the file tests/sim/create.yml writes (sim_ssh_config), each host's key and address in it; no master's session
    assert argv[:3] == ["ssh", "-F", chaos.SIM_SSH_CONFIG] and argv[-2:] == [chaos.FOLLOWER, "true"]
    assert chaos.SIM_SSH_CONFIG.endswith("/sim-ssh/config")
    assert "ControlPath=none" in argv and "BatchMode=yes" in argv and "-n" in argv
    assert kwargs["timeout"] == 30
    # a login that hangs reads as ssh's own failure
    assert chaos.ssh(chaos.FOLLOWER, "sleep 60", timeout=1).returncode == 255
