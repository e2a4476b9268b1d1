# -*- coding: utf-8 -*-
"""sparkfleet.gb10.os_update: the drain's order has one home (vars/main.yml, _os_update_drain_phases), the drain
stops each phase in its own task, and the drained services start again in one place (tasks/start.yml)."""

from __future__ import annotations

import os
import re

import yaml

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "os_update")


def _load(*path):
    with open(os.path.join(ROLE, *path)) as handle:
        return yaml.safe_load(handle)


def test_the_drain_has_one_task_per_phase_in_order():
    phases = _load("vars", "main.yml")["_os_update_drain_phases"]
    loops = [task["loop"] for task in _load("tasks", "drain.yml")]
    assert loops == ["{{ _os_update_drain_phases[%d] }}" % i for i in range(len(phases))]
    assert _load("vars", "main.yml")["_os_update_units"] == "{{ _os_update_drain_phases | flatten }}"


def test_the_drained_services_start_again_only_in_start_yml():
    tasks_dir = os.path.join(ROLE, "tasks")
    starting, callers = [], []
    for name in sorted(os.listdir(tasks_dir)):
        with open(os.path.join(tasks_dir, name)) as handle:
            text = handle.read()
        if re.search(r"state: started", text):
            starting.append(name)
        if re.search(r"ansible\.builtin\.(import|include)_tasks: start\.yml", text):
            callers.append(name)
    assert starting == ["start.yml"]
    # after a refusal or failure, on a host stopped with its batch, and without a reboot
    assert callers == ["batch.yml", "boot.yml", "stopped.yml"]
