# -*- coding: utf-8 -*-
"""The vllm_service role's unit records, key sources, secrets files and keys (plugins/module_utils/vllm_units.py),
on services planned by the fleet plan itself; every expected value is written out."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.filter import vllm_units as unit_filters
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_units as vu

MODELS = [
    {"name": "keyless", "model": "org/a", "api_key": "none", "api_key_optout_reason": "lab"},
    {"name": "own-file", "model": "org/b", "port": 8001, "api_key_file": "/etc/keys/b.env"},
    {"name": "plain", "model": "org/c", "port": 8002},
    {"name": "stored", "model": "org/d", "port": 8003, "source": {"repo": "org/d"}, "served_name": "dee"},
    {"name": "tp", "model": "org/e", "port": 8004, "nodes": ["h2", "h"]},
]
FLEET = {"h": {"sparkfleet_models": MODELS, "sparkfleet_fabric_address": "10.0.0.1"},
         "h2": {"sparkfleet_models": [MODELS[-1]], "sparkfleet_fabric_address": "10.0.0.2"}}


def services():
    return fp.host_view(fp.build(FLEET), "h", vllm_bin="/v/bin/vllm")["services"]


def records(**kw):
    return dict((u["name"], u) for u in vu.units(services(), "/models", "/etc/sv", **kw))


def test_where_each_key_comes_from():
    got = records()
    assert [(n, u["key"], u["guarded"]) for n, u in got.items()] == [
        ("keyless", "none", False), ("own-file", "file", True), ("plain", "generated", True),
        ("stored", "generated", True), ("tp", "follower", False)]
    assert records(inventory_key=True)["plain"]["key"] == "inventory"
    assert records(inventory_key=True)["own-file"]["key"] == "file"  # the entry's own file wins
    assert not any(u["guarded"] for u in records(api_guard=False).values())
    # As Ansible reads a boolean: "false" from -e or an INI inventory turns the guard off too.
    assert not any(u["guarded"] for u in records(api_guard="false").values())
    assert records(api_guard="yes")["plain"]["guarded"] is True
    # api_key: null reads as none too (YAML null), as the role has always read it.
    service = dict(services()[2], model=dict(services()[2]["model"], api_key=None))
    assert vu.key_source(service, True) == "none"


def test_files_and_paths_of_each_unit():
    got = records()
    assert got["plain"]["env_file"] == "/etc/sv/plain.env" and got["plain"]["key_file"] == "/etc/sv/plain.key"
    assert got["own-file"]["env_file"] == "" and got["keyless"]["env_file"] == ""
    assert got["tp"]["unit_file"] == "/etc/systemd/system/sparkfleet-vllm-tp.service"
    assert got["tp"]["cluster"]["vllm_bin"] == "/v/bin/vllm" and got["tp"]["rank"] == 1
    # A hub token puts a secrets file beside every unit, keyed or not.
    assert all(u["env_file"] == "/etc/sv/%s.env" % n for n, u in records(hf_token=True).items())


def test_a_stored_model_is_served_from_its_copy_by_its_name():
    got = records()["stored"]
    assert got["stored"] is True and got["entry"]["model"] == "/models/stored" and got["entry"]["served_name"] == "dee"
    assert records()["plain"]["entry"]["model"] == "org/c" and records()["plain"]["stored"] is False
    # The plan's own service is not changed by it.
    assert services()[3]["entry"]["model"] == "org/d"


def test_keys_are_read_as_an_environment_file_writes_them():
    units = vu.units(services(), "/models", "/etc/sv", inventory_key=False)
    assert vu.key_sources(units) == [{"name": "own-file", "key": "file", "path": "/etc/keys/b.env"},
                                     {"name": "plain", "key": "generated", "path": "/etc/sv/plain.key"},
                                     {"name": "stored", "key": "generated", "path": "/etc/sv/stored.key"}]
    files = {"/etc/keys/b.env": {"exists": True, "content": "# x\nVLLM_API_KEY=old\n  export VLLM_API_KEY='new-1'\n"},
             "/etc/sv/plain.key": {"exists": True, "content": "gen-2\n"},
             "/etc/sv/stored.key": {"exists": False, "content": None}}
    assert vu.api_keys(units, "", files) == {"own-file": "new-1", "plain": "gen-2"}
    inv = vu.units(services(), "/models", "/etc/sv", inventory_key=True)
    assert vu.api_keys(inv, "inv-3", {}) == {"plain": "inv-3", "stored": "inv-3"}
    assert vu.api_keys(units, "", {"/etc/keys/b.env": {"content": "OTHER=1\n"}}) == {"own-file": ""}


def test_secrets_files_and_the_controller_s_copies():
    units = vu.units(services(), "/models", "/etc/sv", inventory_key=True)
    with_hub = vu.units(services(), "/models", "/etc/sv", inventory_key=True, hf_token=True)
    keys = {"plain": "k1", "stored": "k2", "own-file": "k3"}
    assert vu.secret_files(with_hub, "/etc/sv", keys, "hf-4") == [
        {"path": "/etc/sv", "state": "directory", "owner": "root", "group": "root", "mode": "0700"}] + [
        {"path": "/etc/sv/%s.env" % n, "owner": "root", "group": "root", "mode": "0600", "secret": True,
         "content": c} for n, c in (("keyless", "HF_TOKEN=hf-4\n"), ("own-file", "HF_TOKEN=hf-4\n"),
                                    ("plain", "VLLM_API_KEY=k1\nHF_TOKEN=hf-4\n"),
                                    ("stored", "VLLM_API_KEY=k2\nHF_TOKEN=hf-4\n"), ("tp", "HF_TOKEN=hf-4\n"))]
    assert [f["path"] for f in vu.secret_files(units, "/etc/sv", keys)] == [
        "/etc/sv", "/etc/sv/plain.env", "/etc/sv/stored.env"]
    copies = vu.controller_key_files(units, "/home/u/.sparkfleet/lab", "h", {"plain": "k1", "keyless": "x"})
    assert copies == [{"path": "/home/u/.sparkfleet/lab", "state": "directory", "mode": "0700"},
                      {"path": "/home/u/.sparkfleet/lab/h-plain.key", "mode": "0600", "secret": True,
                       "content": "k1\n"}]


def test_the_filters_are_the_functions():
    units = unit_filters.vllm_units(services(), "/models", "/etc/sv", inventory_key=True, hf_token=False)
    assert units == vu.units(services(), "/models", "/etc/sv", True, False, True)
    assert set(unit_filters.FilterModule().filters()) == {
        "vllm_units", "vllm_key_sources", "vllm_api_keys", "vllm_secret_files", "vllm_controller_key_files",
        "vllm_page_cache_heads"}


# ------------------------------------------------------------ who asks whom to drop the page cache
THREE = [{"name": "pp3", "model": "org/p", "nodes": ["a", "b", "c"], "executor": "ray"},
         {"name": "tp2", "model": "org/t", "port": 8001, "nodes": ["b", "c"]},
         {"name": "solo", "model": "org/s", "port": 8002}]
THREE_FLEET = {"a": {"sparkfleet_models": [THREE[0]], "sparkfleet_fabric_address": "10.0.0.1",
                     "group_names": ["sparks", "ray_head"], "sparkfleet_cluster": "r"},
               "b": {"sparkfleet_models": THREE, "sparkfleet_fabric_address": "10.0.0.2", "vllm_service_node_ip": "10.0.1.2",
                     "group_names": ["sparks", "ray_workers"], "sparkfleet_cluster": "r"},
               "c": {"sparkfleet_models": THREE[:2], "sparkfleet_fabric_address": "10.0.0.3",
                     "group_names": ["sparks", "ray_workers"], "sparkfleet_cluster": "r"}}


def _view(host):
    return fp.host_view(fp.build(THREE_FLEET), host)


def test_a_head_asks_every_other_node_at_its_fabric_address():
    got = dict((u["name"], u["page_cache_members"]) for u in vu.units(_view("a")["services"], "/m", "/s"))
    # pp3 (ray): its followers run no vLLM unit, yet each is asked, where the plan reaches it (vllm_service_node_ip first)
    assert got == {"pp3": [{"host": "b", "address": "10.0.1.2"}, {"host": "c", "address": "10.0.0.3"}]}
    got = dict((u["name"], u["page_cache_members"]) for u in vu.units(_view("b")["services"], "/m", "/s"))
    # b heads tp2 (asks c), serves solo alone (asks nobody); it runs no unit for pp3, whose follower it is
    assert got == {"tp2": [{"host": "c", "address": "10.0.0.3"}], "solo": []}
    # a follower's own unit asks nobody (its head does)
    assert [u["page_cache_members"] for u in vu.units(_view("c")["services"], "/m", "/s")] == [[]]


def test_a_member_answers_the_heads_of_the_models_it_follows_and_no_one_else():
    assert vu.page_cache_heads(_view("a")["models"]) == {"models": [], "heads": []}
    assert vu.page_cache_heads(_view("b")["models"]) == {"models": ["pp3"], "heads": [{"host": "a", "address": "10.0.0.1"}]}
    # c follows both: two models, two heads; the same head twice would be listed once
    assert vu.page_cache_heads(_view("c")["models"]) == {
        "models": ["pp3", "tp2"], "heads": [{"host": "a", "address": "10.0.0.1"}, {"host": "b", "address": "10.0.1.2"}]}
    twice = [dict(m, name=n) for m, n in zip([_view("c")["models"][0]] * 2, ("x", "y"))]
    assert vu.page_cache_heads(twice)["heads"] == [{"host": "a", "address": "10.0.0.1"}]
    assert unit_filters.vllm_page_cache_heads(_view("c")["models"]) == vu.page_cache_heads(_view("c")["models"])
