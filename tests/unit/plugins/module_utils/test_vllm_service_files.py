# -*- coding: utf-8 -*-
"""The vllm_service role's files as data, and what their settling means for each unit
(plugins/module_utils/vllm_service_files.py)."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_service_files as vsf

HEAD = {"name": "qwen", "unit": "vllm-qwen", "unit_file": "/etc/systemd/system/vllm-qwen.service", "rank": 0,
        "guarded": True, "env_file": "/etc/sparkfleet/secrets/qwen.env"}
SOLO = {"name": "tiny", "unit": "vllm-tiny", "unit_file": "/etc/systemd/system/vllm-tiny.service", "rank": 0,
        "guarded": False, "env_file": ""}
FOLLOWER = {"name": "big", "unit": "vllm-big", "unit_file": "/etc/systemd/system/vllm-big.service", "rank": 1,
            "guarded": False, "env_file": ""}
GUARD = "/usr/local/lib/sparkfleet/sparkfleet_api_guard.py"
ACTIVE = {"rc": 0, "stdout": "UnitFileState=enabled\nActiveState=active\n"}
STOPPED = {"rc": 0, "stdout": "UnitFileState=enabled\nActiveState=inactive\n"}


def test_unit_files_guard_first_retry_then_each_unit_rendered_from_its_record():
    files = vsf.unit_files([HEAD, SOLO], "/usr/local/lib/sparkfleet", "sparkfleet-retry", 600)
    assert [f["path"] for f in files] == [
        "/usr/local/lib/sparkfleet", GUARD, "/etc/systemd/system/sparkfleet-retry@.service",
        "/etc/systemd/system/sparkfleet-retry@.timer", HEAD["unit_file"], SOLO["unit_file"]]
    assert files[0]["state"] == "directory" and files[0]["mode"] == "0755"
    assert files[1] == {"path": GUARD, "owner": "root", "group": "root", "mode": "0644",
                        "role_file": "sparkfleet_api_guard.py"}
    assert [f["template"] for f in files[2:4]] == ["retry.service.j2", "retry.timer.j2"]
    assert files[4]["template"] == "vllm.service.j2" and files[4]["template_vars"] == {"item": HEAD}
    assert all(f.get("owner") == "root" for f in files)


@pytest.mark.parametrize("units, retry, paths", [
    ([SOLO], 600, 3),   # no guarded unit: no guard
    ([SOLO], 0, 1),     # retry off: no timer
    ([], 600, 0),       # nothing served here: nothing at all
])
def test_unit_files_leave_out_what_is_not_wanted(units, retry, paths):
    assert len(vsf.unit_files(units, "/g", "r", retry)) == paths


def test_headwatch_files_program_then_one_unit_per_follower_none_without():
    files = vsf.headwatch_files([FOLLOWER], "/usr/local/libexec/sparkfleet/headwatch", "sparkfleet-headwatch-")
    assert [f["path"] for f in files] == ["/usr/local/libexec/sparkfleet", "/usr/local/libexec/sparkfleet/headwatch",
                                          "/etc/systemd/system/sparkfleet-headwatch-big.service"]
    assert files[1]["mode"] == "0755" and files[1]["role_file"] == "sparkfleet-vllm-headwatch.py"
    assert files[2]["template_vars"] == {"item": FOLLOWER}
    assert vsf.headwatch_files([], "/x/y", "p-") == []


@pytest.mark.parametrize("drops, member, count, sockets", [
    (True, False, 3, 0), (False, True, 5, 2), (True, True, 5, 2), (False, False, 0, 0)])
def test_page_cache_files_helper_where_used_socket_on_a_member(drops, member, count, sockets):
    files = vsf.page_cache_files(drops, member, "/usr/local/sbin/drop", "/var/lib/sparkfleet/page-cache/last", "pc")
    assert len(files) == count
    assert len([f for f in files if f["path"].startswith("/etc/systemd/system/pc")]) == sockets
    if count:
        assert files[1] == {"path": "/usr/local/sbin/drop", "owner": "root", "group": "root", "mode": "0755",
                            "role_file": "sparkfleet-page-cache.py"}
        assert files[2]["path"] == "/var/lib/sparkfleet/page-cache" and files[2]["state"] == "directory"


def test_unit_reads_every_unit_the_host_wants():
    reads = vsf.unit_reads([HEAD, SOLO], [FOLLOWER], "hw-", "pc.socket")
    assert [r["name"] for r in reads] == ["vllm-qwen.service", "vllm-tiny.service", "hw-big.service", "pc.socket"]
    assert reads[0]["argv"][:3] == ["systemctl", "show", "vllm-qwen.service"]
    assert [r["name"] for r in vsf.unit_reads([SOLO], [], "hw-")] == ["vllm-tiny.service"]


def _reads(**states):
    return {"commands": dict((name + ".service", state) for name, state in states.items())}


def test_unit_results_a_settled_unchanged_unit_is_left_alone():
    result = {"changed_paths": [], "paths": {}}
    records = vsf.unit_results([HEAD, SOLO], result, GUARD, {}, _reads(**{"vllm-qwen": ACTIVE, "vllm-tiny": STOPPED}))
    assert [(r["changed"], r["restart"], r["act"]) for r in records] == [(False, False, False), (False, False, True)]


def test_unit_results_the_guard_or_the_secrets_restart_only_the_units_that_load_them():
    result = {"changed_paths": [GUARD], "paths": {}}
    records = vsf.unit_results([HEAD, SOLO], result, GUARD, {}, _reads(**{"vllm-qwen": ACTIVE, "vllm-tiny": ACTIVE}))
    assert [(r["changed"], r["restart"], r["act"]) for r in records] == [(True, True, True), (False, False, False)]
    records = vsf.unit_results([HEAD, SOLO], {}, GUARD, {"changed_paths": [HEAD["env_file"]]},
                               _reads(**{"vllm-qwen": ACTIVE, "vllm-tiny": ACTIVE}))
    assert [(r["changed"], r["restart"], r["act"]) for r in records] == [(False, True, True), (False, False, False)]


def test_unit_results_check_mode_never_starts_a_unit_it_would_create():
    result = {"changed_paths": [SOLO["unit_file"]], "paths": {SOLO["unit_file"]: {"what": ["created"]}}}
    [record] = vsf.unit_results([SOLO], result, GUARD, {}, {}, check_mode=True)
    assert record["created"] and record["changed"] and not record["act"]
    [record] = vsf.unit_results([SOLO], result, GUARD, {}, {}, check_mode=False)
    assert record["act"] and record["restart"]


def test_headwatch_results_the_program_restarts_every_watch():
    unit = "/etc/systemd/system/hw-big.service"
    records = vsf.headwatch_results([FOLLOWER], {"changed_paths": ["/p"]}, "/p", "hw-", _reads(**{"hw-big": ACTIVE}))
    assert [(r["changed"], r["restart"], r["act"]) for r in records] == [(False, True, True)]
    records = vsf.headwatch_results([FOLLOWER], {"changed_paths": [unit]}, "/p", "hw-", _reads(**{"hw-big": ACTIVE}))
    assert [(r["changed"], r["restart"], r["act"]) for r in records] == [(True, True, True)]
    records = vsf.headwatch_results([FOLLOWER], {}, "/p", "hw-", _reads(**{"hw-big": ACTIVE}))
    assert records[0]["act"] is False


def test_keys_to_generate_only_generated_keys_not_found():
    sources = [{"name": "a", "key": "generated", "path": "/s/a.key"}, {"name": "b", "key": "generated", "path": "/s/b.key"},
               {"name": "c", "key": "file", "path": "/etc/c.env"}]
    found = {"files": {"/s/a.key": {"exists": True}, "/s/b.key": {"exists": False}, "/etc/c.env": {"exists": False}}}
    assert [s["name"] for s in vsf.keys_to_generate(sources, found)] == ["b"]
    assert [s["name"] for s in vsf.keys_to_generate(sources, {})] == ["a", "b"]


def test_state_record_every_wanted_unit_running_and_each_api_healthy():
    head = dict(HEAD, call_address="192.168.100.10", port=8000)
    follower = dict(FOLLOWER, call_address="192.168.100.10", port=8001)
    record = vsf.state_record([head, follower], [follower], "hw-", "pc.socket")
    assert record["units"] == [{"name": n, "enabled": True, "active": True}
                               for n in ("vllm-qwen.service", "vllm-big.service", "hw-big.service", "pc.socket")]
    # Only the API this host serves (rank 0) is asked; the follower serves none.
    assert [c["name"] for c in record["checks"]] == ["vllm-qwen /health"]
    assert record["checks"][0]["argv"][-2:] == ["192.168.100.10", "8000"]
    assert record["checks"][0]["argv"][:2] == ["python3", "-c"]
