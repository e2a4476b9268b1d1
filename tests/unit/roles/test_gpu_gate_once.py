# -*- coding: utf-8 -*-
"""The GPU gate runs once a run on a host: fleet_verify leaves it out when vllm_venv's gate passed earlier in the
same run (its result, vllm_venv_gpu_gate_result, is set), which is right only while nothing between that gate and the
verify changes what the gate reads: the driver, the NCCL environment file, the virtualenv. These tests fail when a
playbook puts one of those roles between the two, or when either side of the hand-over changes."""

import os

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# The roles that change what sparkfleet.gb10.gpu_gate reads.
GATE_INPUTS = {"sparkfleet.gb10.nvidia_driver", "sparkfleet.gb10.nccl", "sparkfleet.gb10.vllm_venv"}


def _load(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return yaml.safe_load(handle)


def _role_names(play):
    names = []
    for role in play.get("roles", []):
        names.append(role["role"] if isinstance(role, dict) else role)
    for task in play.get("tasks", []) + play.get("post_tasks", []):
        included = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role")
        if included:
            names.append(included["name"])
    return names


def _between(sequence, first, last):
    start = sequence.index(first)
    end = sequence.index(last)
    assert start < end, "%s must come before %s" % (first, last)
    return sequence[start + 1:end]


def test_site_runs_nothing_that_changes_the_gate_between_vllm_venv_and_verify():
    steps = []
    for play in _load("playbooks", "site.yml"):
        if "ansible.builtin.import_playbook" in play:
            steps.append("verify" if play["ansible.builtin.import_playbook"] == "verify.yml" else play["name"])
        else:
            steps.extend(_role_names(play))
    assert set(_between(steps, "sparkfleet.gb10.vllm_venv", "verify")).isdisjoint(GATE_INPUTS)


def test_rolling_update_runs_the_gate_after_the_roles_that_change_it():
    steps = []
    for play in _load("playbooks", "rolling_update.yml"):
        if "ansible.builtin.import_playbook" not in play:
            steps.extend(_role_names(play))
    assert set(_between(steps, "sparkfleet.gb10.vllm_venv", "sparkfleet.gb10.fleet_verify")).isdisjoint(GATE_INPUTS)
    assert steps.index("sparkfleet.gb10.nccl") < steps.index("sparkfleet.gb10.vllm_venv")


def test_the_hand_over_between_the_two_gates():
    gate_tasks = _load("roles", "vllm_venv", "tasks", "gate.yml")
    keep = [task for task in gate_tasks if "vllm_venv_gpu_gate_result" in task.get("ansible.builtin.set_fact", {})]
    assert len(keep) == 1 and keep[0]["when"] == "__vllm_venv_gate is not skipped"
    verify = [task for task in _load("roles", "fleet_verify", "tasks", "main.yml")
              if task.get("ansible.builtin.include_role", {}).get("tasks_from") == "gate"]
    assert len(verify) == 1
    assert verify[0]["when"] == ["fleet_verify_gpu_gate | bool", "vllm_venv_gpu_gate_result is not defined"]
