# -*- coding: utf-8 -*-
"""fleet_verify leaves out a gate whose proof a role_state confirmation made earlier in the same run: the jumbo-frame
gate where every host confirmed qsfp_network (with its pings) and fabric_firewall, the NCCL SASS gate where nccl was
confirmed and handed back its recorded SASS. That is right only while no role between the confirmation and the verify
changes what the gate reads: the fabric (netplan, MTU, firewall) or the installed NCCL library. These tests fail when
a playbook puts such a role between them, or when either side of the hand-over changes."""

import os

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FABRIC = {"sparkfleet.gb10.qsfp_network", "sparkfleet.gb10.fabric_firewall"}
LIBRARY = {"sparkfleet.gb10.nccl"}


def _load(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return yaml.safe_load(handle)


def _steps(playbook):
    steps = []
    for play in _load("playbooks", playbook):
        if "ansible.builtin.import_playbook" in play:
            steps.append("verify" if play["ansible.builtin.import_playbook"] == "verify.yml" else play["name"])
            continue
        for role in play.get("roles", []):
            steps.append(role["role"] if isinstance(role, dict) else role)
        for task in play.get("tasks", []) + play.get("post_tasks", []):
            included = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role")
            if included:
                steps.append("verify" if included["name"] == "sparkfleet.gb10.fleet_verify" else included["name"])
    return steps


def test_site_changes_neither_the_fabric_nor_the_library_between_their_confirmation_and_verify():
    steps = _steps("site.yml")
    verify = steps.index("verify")
    assert steps.index("sparkfleet.gb10.qsfp_network") < steps.index("sparkfleet.gb10.fabric_firewall") < verify
    after_fabric = steps[steps.index("sparkfleet.gb10.fabric_firewall") + 1:verify]
    assert set(after_fabric).isdisjoint(FABRIC)
    assert set(steps[steps.index("sparkfleet.gb10.nccl") + 1:verify]).isdisjoint(LIBRARY)


def test_rolling_update_changes_no_library_between_nccl_and_verify():
    steps = _steps("rolling_update.yml")
    assert set(steps[steps.index("sparkfleet.gb10.nccl") + 1:steps.index("verify")]).isdisjoint(LIBRARY)
    # The roll confirms no fabric: its verify pings the peers itself.
    assert set(steps).isdisjoint(FABRIC)


def test_the_hand_over_between_the_confirmations_and_the_gates():
    gates = dict((task["name"], task) for task in _load("roles", "fleet_verify", "tasks", "main.yml"))
    jumbo = gates["Jumbo frames between every pair of fabric peers"]
    assert jumbo["ansible.builtin.include_role"]["name"] == "sparkfleet.gb10.qsfp_network"
    assert "not hostvars | sparkfleet.gb10.fabric_confirmed(ansible_play_hosts_all)" in jumbo["when"]
    sass = gates["The NCCL the services load carries SASS for this GPU"]
    assert any("sparkfleet.gb10.role_confirmed(inventory_hostname, 'nccl')" in c and "nccl_verify_result is defined" in c
               for c in sass["when"])
    # nccl records the SASS its verify read and hands it back where it is confirmed.
    record = [task for task in _load("roles", "nccl", "tasks", "main.yml")
              if task.get("sparkfleet.gb10.role_state", {}).get("state") == "record"]
    assert len(record) == 1 and "nccl_verify_result" in record[0]["sparkfleet.gb10.role_state"]["facts"]
    publish = [task for task in _load("roles", "nccl", "tasks", "state.yml")
               if "nccl_verify_result" in task.get("ansible.builtin.set_fact", {})]
    assert len(publish) == 1 and "__nccl_state.facts.nccl_verify_result" in publish[0]["ansible.builtin.set_fact"][
        "nccl_verify_result"]
