# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The files of the vllm_service role as data, and what the role makes of their settling.

Each ``*_files`` function returns the entries of one ``sparkfleet.gb10.host_files`` call: directories, files whose
content is a role template (``template``, ``template_vars``) or a role file (``role_file``), rendered on the
controller by host_files' action. The ``*_results`` functions read that call's result (and the role's read of the
units' state, ``host_read``'s ``commands``) into one record per unit: ``item``, ``changed`` (its files changed this
run), ``created``, ``restart`` (restart rather than start) and ``act`` (whether the start task must call systemd at
all: not for a unit running and enabled whose inputs did not change, never in check mode for a unit this run would
create). Pure Python (filters in plugins/filter/vllm_service_files.py), unit tested in
tests/unit/plugins/module_utils/test_vllm_service_files.py.
"""

from __future__ import annotations

import posixpath

from ansible_collections.sparkfleet.gb10.plugins.module_utils.systemd_unit import settled, show_command

UNIT_DIR = "/etc/systemd/system"
API_GUARD_FILE = "sparkfleet_api_guard.py"
HEADWATCH_FILE = "sparkfleet-vllm-headwatch.py"
PAGE_CACHE_FILE = "sparkfleet-page-cache.py"


def _directory(path):
    return {"path": path, "state": "directory", "owner": "root", "group": "root", "mode": "0755"}


def _file(path, mode="0644", **source):
    return dict({"path": path, "owner": "root", "group": "root", "mode": mode}, **source)


def unit_files(units, guard_dir, retry_unit, retry_after_sec):
    """The API guard (where a unit of this host loads it), the retry timer's units (where the host serves and the
    retry is on) and each service's unit, in the order they must land."""
    out = []
    if any(unit.get("guarded") for unit in units):
        out += [_directory(guard_dir), _file(posixpath.join(guard_dir, API_GUARD_FILE), role_file=API_GUARD_FILE)]
    if units and int(retry_after_sec) > 0:
        out += [_file("%s/%s@.%s" % (UNIT_DIR, retry_unit, kind), template="retry.%s.j2" % kind)
                for kind in ("service", "timer")]
    out += [_file(unit["unit_file"], template="vllm.service.j2", template_vars={"item": unit}) for unit in units]
    return out


def headwatch_unit(prefix, follower):
    return "%s%s.service" % (prefix, follower["name"])


def headwatch_files(followers, program, prefix):
    """The head watch program and each follower's head watch unit (none without followers)."""
    if not followers:
        return []
    return ([_directory(posixpath.dirname(program)), _file(program, "0755", role_file=HEADWATCH_FILE)]
            + [_file(posixpath.join(UNIT_DIR, headwatch_unit(prefix, follower)), template="headwatch.service.j2",
                     template_vars={"item": follower}) for follower in followers])


def page_cache_files(helper_wanted, member, helper, state_file, unit):
    """The drop helper and its record's directory (where a unit of this host drops or the host answers its heads),
    and on a member the socket and its per-request service."""
    out = []
    if helper_wanted or member:
        out += [_directory(posixpath.dirname(helper)), _file(helper, "0755", role_file=PAGE_CACHE_FILE),
                _directory(posixpath.dirname(state_file))]
    if member:
        out += [_file("%s/%s.socket" % (UNIT_DIR, unit), template="page-cache.socket.j2"),
                _file("%s/%s@.service" % (UNIT_DIR, unit), template="page-cache.service.j2")]
    return out


def wanted_units(units, followers, headwatch_prefix, page_cache_socket=""):
    """Each unit this host wants enabled and running: its vLLM units, its followers' head watch units and, on a
    member, the page-cache socket."""
    names = ["%s.service" % unit["unit"] for unit in units]
    names += [headwatch_unit(headwatch_prefix, follower) for follower in followers]
    return names + ([page_cache_socket] if page_cache_socket else [])


def unit_reads(units, followers, headwatch_prefix, page_cache_socket=""):
    """``host_read`` commands for the state of each unit this host wants (``wanted_units``)."""
    return [show_command(name) for name in wanted_units(units, followers, headwatch_prefix, page_cache_socket)]


# The health check of an API: vLLM's /health answers without a key (the API guard's open paths too).
_HEALTH = ("import http.client, sys; c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10); "
           "c.request('GET', '/health'); sys.exit(c.getresponse().status != 200)")


def state_record(units, followers, headwatch_prefix, page_cache_socket=""):
    """What ``sparkfleet.gb10.role_state`` confirms of the role's services besides their files: each wanted unit
    enabled and running, and each API this host serves (rank 0) answering /health."""
    return {"units": [{"name": name, "enabled": True, "active": True}
                      for name in wanted_units(units, followers, headwatch_prefix, page_cache_socket)],
            "checks": [{"name": "%s /health" % unit["unit"],
                        "argv": ["python3", "-c", _HEALTH, str(unit["call_address"]), str(unit["port"])]}
                       for unit in units if int(unit.get("rank") or 0) == 0]}


def _settled(reads, unit):
    commands = (reads or {}).get("commands") or {}
    return settled(commands.get(unit), enabled=True)


def _record(item, result, paths, also_restart, reads, unit, check_mode):
    changed_paths = set((result or {}).get("changed_paths") or [])
    by_path = (result or {}).get("paths") or {}
    changed = any(path in changed_paths for path in paths)
    created = "created" in ((by_path.get(paths[0]) or {}).get("what") or [])
    restart = changed or also_restart
    act = not (check_mode and created) and (restart or not _settled(reads, unit))
    return {"item": item, "changed": changed, "created": created, "restart": restart, "act": act}


def unit_results(units, result, guard_file, secrets, reads, check_mode=False):
    """One record per vLLM unit from the unit files' host_files ``result``: changed when its unit file changed, or
    the API guard it loads; restarted too when its secrets file (``env_file``) changed in the secrets files'
    host_files result ``secrets``."""
    secrets_changed = set((secrets or {}).get("changed_paths") or [])
    return [_record(unit, result, [unit["unit_file"]] + ([guard_file] if unit.get("guarded") else []),
                    bool(unit.get("env_file")) and unit["env_file"] in secrets_changed, reads,
                    "%s.service" % unit["unit"], check_mode)
            for unit in units]


def headwatch_results(followers, result, program, prefix, reads, check_mode=False):
    """One record per follower's head watch unit: changed when its unit changed; restarted too when the program
    changed."""
    program_changed = program in set((result or {}).get("changed_paths") or [])
    return [_record(follower, result, [posixpath.join(UNIT_DIR, headwatch_unit(prefix, follower))], program_changed,
                    reads, headwatch_unit(prefix, follower), check_mode)
            for follower in followers]


def keys_to_generate(key_sources, key_files):
    """The generated keys (``key_sources`` of vllm_units) that the read of the key files (``host_read``'s ``files``,
    by path) did not find."""
    found = set(path for path, info in ((key_files or {}).get("files") or {}).items() if (info or {}).get("exists"))
    return [source for source in key_sources if source.get("key") == "generated" and source.get("path") not in found]
