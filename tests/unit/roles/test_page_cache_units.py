# -*- coding: utf-8 -*-
"""What the units say about the page-cache drops and the stack limit, on every example inventory.

The vLLM and Ray units are read from tests/contract/rendered/ (what the roles' own templates render for each example,
kept current by tests/contract's test_rendering_is_the_recorded_one); the members' socket and service are rendered
here with the role's defaults and vars on the fleet plan (render_role_vars)."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RENDERED = os.path.join(REPO, "tests", "contract", "rendered")
PORT = fleet_default("page_cache_port")
STATE = fleet_default("page_cache_state_file")
# Each multi-node model's head and the members it asks, at their fabric addresses (the examples' host_vars).
HEADS = {
    "two-spark": {"spark-1": {"qwen3-235b": {"spark-2": "192.168.100.11"}}},
    "three-spark": {"spark-1": {"llama-405b": {"spark-2": "192.168.100.11", "spark-3": "192.168.100.12"}}},
    "sim": {"spark-1": {"tiny-tp": {"spark-2": "192.168.100.11"}}},
}


def rendered(name):
    with open(os.path.join(RENDERED, name + ".json")) as handle:
        return json.load(handle)


def lines(unit, key):
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(key + "=")]


def every_vllm_unit():
    for name in sorted(f[:-5] for f in os.listdir(RENDERED) if f.endswith(".json")):
        for host, found in sorted(rendered(name).items()):
            for model, unit in sorted(found["vllm_units"].items()):
                yield name, host, model, unit


@pytest.mark.parametrize("name,host,model,unit", list(every_vllm_unit()))
def test_each_start_drops_its_page_cache_first_and_asks_its_members_if_a_head(name, host, model, unit):
    pre = lines(unit, "ExecStartPre")
    local = shlex.split(pre[0].lstrip("+"))
    # as root ('+'), this host's own drop, recorded where the probe and the fleet table read it
    assert pre[0].startswith("+") and local[2:3] == ["local"]
    assert local[local.index("--state") + 1] == STATE and local[local.index("--unit") + 1] == "sparkfleet-vllm-" + model
    members = HEADS.get(name, {}).get(host, {}).get(model, {})
    if not members:
        assert len(pre) == 1, "a unit that heads no multi-node model asks nobody"
        return
    ask = shlex.split(pre[1])
    # unprivileged (no '+'), after the local drop, before ExecStart: every other node, at its fabric address
    assert ask[2] == "ask" and unit.index(pre[1]) < unit.index("\nExecStart=")
    assert sorted(a for a in ask if a.startswith("--member=")) == sorted(
        "--member=%s=%s:%d" % (member, address, PORT) for member, address in members.items())
    assert ask[ask.index("--source") + 1] == "192.168.100.10"  # the head's own fabric address, which members accept
    assert ask[ask.index("--unit") + 1] == "sparkfleet-vllm-" + model


@pytest.mark.parametrize("name,host,model,unit", list(every_vllm_unit()))
def test_the_start_timeout_bounds_the_drops_and_the_stack_is_the_seeds(name, host, model, unit):
    # TimeoutStartSec of a Type=simple unit bounds ExecStartPre, nothing after: the drops' own bound, not the load's
    assert lines(unit, "Type") == ["simple"]
    assert lines(unit, "TimeoutStartSec") == [str(rulebook.setting("page_cache_drop_timeout_sec"))]
    assert lines(unit, "LimitSTACK") == [str(rulebook.setting("service_stack_limit"))]


@pytest.mark.parametrize("name", sorted(f[:-5] for f in os.listdir(RENDERED) if f.endswith(".json")))
def test_the_ray_units_carry_the_stack_limit_too(name):
    units = [unit for found in rendered(name).values() for unit in (found["ray_head_unit"], found["ray_worker_unit"])
             if unit]
    for unit in units:
        assert lines(unit, "LimitSTACK") == [str(rulebook.setting("service_stack_limit"))]


WHAT = ("{'member': _vllm_service_page_cache_member, 'heads': _vllm_service_page_cache.heads,"
        " 'socket': lookup('ansible.builtin.template', '%(roles)s/vllm_service/templates/page-cache.socket.j2')"
        " if _vllm_service_page_cache_member else '',"
        " 'service': lookup('ansible.builtin.template', '%(roles)s/vllm_service/templates/page-cache.service.j2')"
        " if _vllm_service_page_cache_member else ''}") % {"roles": os.path.join(REPO, "roles")}
FILES = ["vllm_service/defaults/main.yml", "vllm_service/vars/main.yml"]


def test_a_member_listens_on_its_fabric_address_for_its_heads_only(render_role_vars):
    seen = render_role_vars(os.path.join(REPO, "inventories", "three-spark"), FILES, WHAT)
    assert not seen["spark-1"]["member"] and seen["spark-1"]["socket"] == ""
    for host, address in (("spark-2", "192.168.100.11"), ("spark-3", "192.168.100.12")):
        found = seen[host]
        # a ray follower: no vLLM unit of its own on this host, yet it listens
        assert found["member"] and found["heads"] == [{"host": "spark-1", "address": "192.168.100.10"}]
        assert lines(found["socket"], "ListenStream") == ["%s:%d" % (address, PORT)]
        assert lines(found["socket"], "Accept") == ["yes"] and lines(found["socket"], "FreeBind") == ["true"]
        serve = shlex.split(lines(found["service"], "ExecStart")[0])
        assert serve[2] == "serve" and [a for a in serve if a.startswith("--allow")] == ["--allow=192.168.100.10"]
        assert serve[serve.index("--state") + 1] == STATE and serve[serve.index("--host") + 1] == host
        assert lines(found["service"], "StandardInput") == ["socket"]


def test_a_member_listens_whatever_its_own_drop_setting_and_only_a_member_does(render_role_vars):
    # The head's setting decides for its model: a member that turned its own units' drop off still answers, or the
    # head's start would wait for it until TimeoutStartSec.
    seen = render_role_vars(os.path.join(REPO, "inventories", "two-spark"), FILES, WHAT,
                            extra_vars={"vllm_service_drop_caches": False})
    assert seen["spark-2"]["member"] and not seen["spark-1"]["member"]
    seen = render_role_vars(os.path.join(REPO, "inventories", "dual-independent"), FILES, WHAT)
    assert not any(found["member"] for found in seen.values())
