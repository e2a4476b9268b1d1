# -*- coding: utf-8 -*-
"""ray_status on real Ray 2.60.0 output (tests/fixtures/ray, see its README)."""
import functools
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.ray_status import FilterModule, ray_status

from fixture_files import fixture_text  # tests/unit/fixture_files.py

recording = functools.partial(fixture_text, "ray")  # the text of tests/fixtures/ray/<name>


def test_registered():
    assert set(FilterModule().filters()) == {"ray_status"}


def test_two_members_alive():
    status = ray_status(recording("status-two-alive.txt"))
    assert len(status["active"]) == 2
    assert all(node.startswith("node_") for node in status["active"])
    assert status["pending"] == [] and status["failures"] == []
    assert status["gpus_total"] == 2.0 and status["gpus_used"] == 0.0
    assert status["resources"]["CPU"] == {"used": 0.0, "total": 4.0}
    assert status["resources"]["memory"]["total"].endswith("GiB")


def test_a_killed_worker_leaves_active_without_a_failure_line():
    alive = ray_status(recording("status-two-alive.txt"))
    dead = ray_status(recording("status-worker-dead.txt"))
    assert len(dead["active"]) == 1
    assert dead["active"][0] in alive["active"]
    assert dead["failures"] == []
    assert dead["gpus_total"] == 1.0


def test_not_ray_status_output():
    with pytest.raises(AnsibleFilterError, match="not the output of `ray status`"):
        ray_status("Could not connect to Ray cluster at 10.0.0.1:6379")


def test_state_api_fields_the_worker_role_polls():
    """roles/ray waits, on a worker, for an entry with state ALIVE and its node_ip in `ray list nodes`."""
    alive = json.loads(recording("list-nodes-two-alive.json"))
    dead = json.loads(recording("list-nodes-worker-dead.json"))
    assert {(n["node_ip"], n["state"]) for n in alive} == {("10.77.0.1", "ALIVE"), ("10.77.0.2", "ALIVE")}
    assert {(n["node_ip"], n["state"]) for n in dead} == {("10.77.0.1", "ALIVE"), ("10.77.0.2", "DEAD")}
    assert [n["is_head_node"] for n in dead if n["node_ip"] == "10.77.0.1"] == [True]
