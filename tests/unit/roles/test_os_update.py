# -*- coding: utf-8 -*-
"""sparkfleet.gb10.os_update: the drain's order has one home (filter drain_phases, plugins/module_utils/host_plan.py,
read as vars/main.yml's _os_update_drain_phases), the drain stops each phase in its own task, and the drained
services start again in one place (tasks/start.yml). The drain stops the active retry timers of the host's vLLM
units (their OnFailure=) before its first phase and after its last, so that none starts vLLM during the package
upgrade."""

from __future__ import annotations

import os
import re

import yaml

from ansible_collections.sparkfleet.gb10.plugins.module_utils import host_plan

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "os_update")


def _load(*path):
    with open(os.path.join(ROLE, *path)) as handle:
        return yaml.safe_load(handle)


PHASE_LOOP = re.compile(r"^\{\{ _os_update_drain_phases\[\d+\] \}\}$")


def _phase_tasks(tasks):
    """The indexes of the drain's phase tasks (those that loop over one phase)."""
    return [i for i, task in enumerate(tasks) if PHASE_LOOP.match(str(task.get("loop", "")))]


def test_the_drain_has_one_task_per_phase_in_order():
    assert "sparkfleet.gb10.drain_phases(" in _load("vars", "main.yml")["_os_update_drain_phases"]
    phases = host_plan.drain_phases({}, "head", "worker")
    tasks = _load("tasks", "drain.yml")
    phase_tasks = _phase_tasks(tasks)
    loops = [tasks[i]["loop"] for i in phase_tasks]
    assert loops == ["{{ _os_update_drain_phases[%d] }}" % i for i in range(len(phases))]
    # one after the other, nothing between them
    assert phase_tasks == list(range(phase_tasks[0], phase_tasks[0] + len(phases)))
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


def _is_retry_timer_read(task):
    return (task.get("sparkfleet.gb10.host_read", {}).get("commands") == "{{ _os_update_retry_reads }}"
            and task.get("register") == "__os_update_retry_read")


def _is_retry_timer_stop(task):
    return (task.get("ansible.builtin.systemd_service") == {"name": "{{ item }}", "state": "stopped"}
            and task.get("loop") == "{{ _os_update_retry_timers }}")


def test_the_drain_stops_the_retry_timers_before_the_first_phase_and_after_the_last():
    # A retry timer active at the drain, or started by a unit that fails as the drain stops it, would start vLLM
    # on the GPU during the package upgrade: read and stopped right before phase 1, read and stopped again right
    # after the last phase.
    tasks = _load("tasks", "drain.yml")
    phase_tasks = _phase_tasks(tasks)
    first, last = phase_tasks[0], phase_tasks[-1]
    assert first >= 2, "no retry timer step before the drain's phase 1"
    assert _is_retry_timer_read(tasks[first - 2]) and _is_retry_timer_stop(tasks[first - 1])
    assert len(tasks) >= last + 3, "no retry timer step after the drain's last phase"
    assert _is_retry_timer_read(tasks[last + 1]) and _is_retry_timer_stop(tasks[last + 2])
    # A timer that fired between the reads started its unit with no timer left to find: the vLLM units are stopped
    # once more, last.
    assert tasks[-1].get("ansible.builtin.systemd_service") == {"name": "{{ item }}.service", "state": "stopped"}
    assert tasks[-1].get("loop") == "{{ _os_update_vllm_units }}" and len(tasks) == last + 4
    # Nothing runs in check mode that a real drain would not: no task of the drain turns check mode off.
    assert all("check_mode" not in task for task in tasks)


def test_the_retry_timers_are_what_the_vllm_units_name_not_a_rule_written_again():
    # vllm_service writes the rule once, OnFailure=<vllm_service_retry_unit>@%N.timer in the vLLM unit; the drain
    # reads it from systemd, so the role must not spell the timers' names itself.
    template = os.path.join(ROLE, "..", "vllm_service", "templates", "vllm.service.j2")
    with open(template) as handle:
        assert re.search(r"^OnFailure=.+[.]timer$", handle.read(), re.M), \
            "vLLM's OnFailure= no longer names a timer: _os_update_retry_timers selects timers"
    files = [os.path.join(ROLE, part, name) for part in ("tasks", "vars", "defaults")
             for name in os.listdir(os.path.join(ROLE, part))] + [host_plan.__file__]
    for name in files:
        with open(name) as handle:
            text = handle.read()
        assert "vllm_service_retry_unit }}" not in text and not re.search(r"@[^\s'\"]*[.]timer", text), name
    reads = host_plan.retry_reads(["sparkfleet-vllm-x"])
    assert [read["name"] for read in reads] == ["on_failure", "active_timers"]


SIM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "inventories", "sim")
VARS = ["os_update/defaults/main.yml", "os_update/vars/main.yml"]


def test_the_retry_timers_read_are_the_active_timers_the_vllm_units_name(render_role_vars):
    # As systemd answers on the two-Spark simulated fleet (tiny-tp: head on spark-1, follower on spark-2): the
    # unit's own timer, active; a timer of a unit gone, not active; a non-timer OnFailure= unit; a timer that is
    # active but no vLLM unit's.
    unit = "sparkfleet-vllm-tiny-tp"
    read = {"commands": {
        "on_failure": {"rc": 0, "stdout_lines": [
            "OnFailure=sparkfleet-retry@%s.timer notify@%s.service" % (unit, unit), "",
            "OnFailure=sparkfleet-retry@sparkfleet-vllm-gone.timer", "", "OnFailure="]},
        "active_timers": {"rc": 0, "stdout_lines": [
            "apt-daily.timer loaded active waiting Daily apt download activities",
            "sparkfleet-retry@%s.timer loaded active waiting Start %s again 900 s after it failed" % (unit, unit)]}}}
    seen = render_role_vars(SIM, VARS, "{'units': _os_update_vllm_units, 'reads': _os_update_retry_reads, "
                                       "'timers': _os_update_retry_timers}",
                            extra_vars={"__os_update_retry_read": read})
    for host in ("spark-1", "spark-2"):
        assert seen[host]["units"] == [unit]
        assert seen[host]["reads"][0]["argv"] == ["systemctl", "show", "--property=OnFailure", unit + ".service"]
        assert seen[host]["reads"][1]["argv"][:2] == ["systemctl", "list-units"]
        assert seen[host]["timers"] == ["sparkfleet-retry@%s.timer" % unit]


def test_no_retry_timer_before_the_read_or_without_a_vllm_unit(render_role_vars):
    # The read skipped (a host without vLLM units) or no unit with OnFailure= (vllm_service_retry_after_sec 0):
    # nothing to stop, and the stop task loops over nothing.
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    seen = render_role_vars(SIM, VARS, "_os_update_retry_timers", extra_vars={"__os_update_retry_read": skipped})
    assert seen == {"spark-1": [], "spark-2": []}


def _tasks_of(tasks):
    """Every task of a tasks file, those inside blocks (block, rescue, always) included."""
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks_of(task.get(key) or [])


def test_every_package_change_runs_detached_and_is_waited_for():
    # A dropped SSH connection must not hang up dpkg halfway: each apt task of the upgrade runs under Ansible's async
    # wrapper, and Ansible's own polling waits for it (an async_status task with until would not retry a poll whose
    # connection failed: the host would be unreachable, its rescue and its holds' always skipped).
    tasks = list(_tasks_of(_load("tasks", "upgrade.yml")))
    apt = [i for i, task in enumerate(tasks) if "ansible.builtin.apt" in task]
    assert len(apt) == 2
    for i in apt:
        assert tasks[i]["poll"] > 0 and tasks[i]["async"] == "{{ os_update_upgrade_timeout }}", tasks[i]["name"]
    assert not [task for task in tasks if "ansible.builtin.async_status" in task]
    # the limit kills dpkg: hours
    assert _load("defaults", "main.yml")["os_update_upgrade_timeout"] >= 3 * 3600


def test_the_whole_installed_unit_is_held_again_not_only_what_this_run_lifted():
    tasks = list(_tasks_of(_load("tasks", "upgrade.yml")))
    hold = next(task for task in tasks if task.get("name") == "Hold the unit again")
    assert "os_update_plan.unit_installed" in hold["loop"] and "os_update_plan.holds_lifted" in hold["loop"]


def test_firmware_has_its_own_reboot_after_the_kernels_gates():
    # the kernel's reboot does not install firmware nor reboot for it; the firmware phase runs after the gates
    boot = _load("tasks", "boot.yml")
    assert not any("firmware" in str(task.get("ansible.builtin.command", "")) or "item.argv" in str(task)
                   for task in boot)
    assert "firmware" not in str(next(t for t in boot if t["name"] == "Decide on the reboot"))
    main = _load("tasks", "main.yml")
    names = [task["name"] for task in main]
    assert names.index("Firmware, its own reboot, verified after it by version") > names.index("Gates after the update")
    firmware = _load("tasks", "firmware.yml")
    order = [task["name"] for task in firmware]
    assert order.index("Install the firmware updates of the plan") < order.index("Reboot for the firmware") < \
        order.index("Judge the firmware by version") < order.index("Refuse firmware its device does not run") < \
        order.index("The host's gates after the firmware's reboot")
    assert firmware[1]["ansible.builtin.import_tasks"] == "drain.yml"
