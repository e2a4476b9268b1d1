#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Confirm in one call that a role's managed state on a host is as its last complete run left it, or record it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_state
short_description: Confirm a converged role in one call, or record what it manages after a complete run
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.no_diff
description:
  - "O(state=check): reads the role's record on the host and the host's state of everything the record names, at
    once: each managed path (type, content by sha256, link target, mode, owner, group), each unit (enabled, running,
    as the role wants it; one C(systemctl show) for all), each package (version and hold; one C(dpkg-query) for
    all) and each read-only check the role named (a service's health). The role is converged when the digest of its
    inputs is the one recorded and nothing differs; RV(drift) names each difference."
  - With drift (and outside check mode) the record is removed before the role changes anything, so a run that stops
    halfway leaves no record and the next run is a full one again.
  - "O(state=record): at the end of a complete run, reads the same state of O(paths) and O(packages) and writes the
    record (root only, 0600) with O(units) and O(checks) as the role wants them."
  - The digest is made on the controller by the module's action plugin from O(inputs), the role's settings (the
    variables its C(meta/argument_specs.yml) names) and the role's and the collection's plugin code, so a changed
    setting, plan or release of the collection makes the next run a full one. Only the digest reaches the host.
  - The record is bookkeeping; writing or removing it is not reported as a change.
options:
  role:
    description: The role's name (the record is C(<store>/<role>.json)).
    type: str
    required: true
  state:
    description: V(check) confirms, V(record) writes the record.
    type: str
    choices: [check, record]
    default: check
  inputs:
    description:
      - What the role's work follows from besides its settings (the plan's share of the host, rendered argv and
        environment). Digested on the controller by the action plugin, with the role's settings and code; never sent
        to the host.
    type: raw
  digest:
    description: The digest the action plugin made; not for playbooks.
    type: str
  paths:
    description: Managed files, directories and links (O(state=record)); each is recorded as it is now.
    type: list
    elements: str
    default: []
  stat_paths:
    description:
      - Large files recorded by size and modification time instead of content (O(state=record)), so a confirmation
        reads no file whole (a model's weights, which the role's full run proves against their manifest's sha256). A
        file changed by hand changes its time, which is drift.
    type: list
    elements: str
    default: []
  units:
    description: Units as the role wants them (O(state=record)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit's full name (C(sparkfleet-ray-head.service)).
        type: str
        required: true
      enabled:
        description: Whether it must be enabled (V(true)) or not (V(false)); null does not judge it.
        type: bool
      active:
        description: Whether it must be running; null does not judge it.
        type: bool
  packages:
    description: Packages whose version and hold are recorded as they are now (O(state=record)).
    type: list
    elements: str
    default: []
  checks:
    description: Read-only commands that must exit 0 at every confirmation (O(state=record)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The check's name in RV(drift).
        type: str
        required: true
      argv:
        description: The command, without a shell.
        type: list
        elements: str
        required: true
  drift:
    description:
      - Differences the role found itself before the check (O(state=check)), each in words (a read of its own, such
        as a live firewall table that is not the planned one); the role is not converged where there is any, and the
        record is removed as for any other drift.
    type: list
    elements: str
    default: []
  facts:
    description:
      - What the complete run found that later tasks read (O(state=record)), kept in the record and handed back as
        RV(facts) by a confirmation that finds the host converged. Only facts the recorded state proves belong here
        (a library's SASS, read from the same bytes the record holds by checksum), never a secret.
    type: dict
    default: {}
  store:
    description: The directory of the records.
    type: path
    default: /var/lib/sparkfleet/role-state
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Confirm the role's state in one call
  sparkfleet.gb10.role_state:
    role: fabric_firewall
    inputs: "{{ _fabric_firewall_plan }}"
  register: __fabric_firewall_state

- name: Nothing to do where the role is converged
  ansible.builtin.meta: end_role
  when: __fabric_firewall_state.converged

- name: Record what the role manages (last task of the role)
  sparkfleet.gb10.role_state:
    role: fabric_firewall
    state: record
    inputs: "{{ _fabric_firewall_plan }}"
    paths: [/etc/sparkfleet/firewall/fabric.nft]
    units: [{name: sparkfleet-firewall.service, enabled: true}]
    checks: [{name: table loaded, argv: [nft, list, table, inet, sparkfleet]}]
"""

RETURN = r"""
converged:
  description: Whether the record's digest is the inputs' and the host matches it (O(state=check)).
  returned: always
  type: bool
drift:
  description: Each difference found, in words (empty when converged).
  returned: always
  type: list
  elements: str
msg:
  description:
    - "Where the role is not converged (O(state=check)), C(<host>: <role> runs in full: <each difference>), shown
      whatever the verbosity, so a rerun's output names every hand change it puts right."
  returned: when not converged
  type: str
checked:
  description: The names of the read-only checks that passed (O(state=check)); empty unless RV(converged).
  returned: always
  type: list
  elements: str
facts:
  description: The facts the complete run recorded (O(facts)); empty unless RV(converged).
  returned: always
  type: dict
recorded:
  description: Whether the record was written (O(state=record), not in check mode) or removed (O(state=check)).
  returned: always
  type: bool
"""

import grp
import hashlib
import json
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_state as rs


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def path_state(path, by_stat=False):
    """What a path is now: type, content's sha256 (``by_stat``: size and modification time) or link target, mode,
    owner and group."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"type": "absent"}
    out = {"mode": "%04o" % stat.S_IMODE(info.st_mode), "owner": _name(pwd.getpwuid, info.st_uid),
           "group": _name(grp.getgrgid, info.st_gid)}
    if stat.S_ISLNK(info.st_mode):
        out.update(type="link", target=os.readlink(path))
        del out["mode"]
    elif stat.S_ISDIR(info.st_mode):
        out["type"] = "directory"
    elif stat.S_ISREG(info.st_mode) and by_stat:
        out.update(type="file", size=info.st_size, mtime=info.st_mtime_ns)
    elif stat.S_ISREG(info.st_mode):
        sha = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        out.update(type="file", sha256=sha.hexdigest())
    else:
        out["type"] = "other"
    return out


def read_units(module, names):
    if not names:
        return {}
    rc, out, err = module.run_command(["systemctl", "show"] + list(names)
                                      + ["--property=" + ",".join(rs.UNIT_PROPERTIES)])
    return rs.parse_units(out) if rc == 0 else {}


def read_packages(module, names):
    if not names:
        return {}
    rc, out, err = module.run_command(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Status}\n"] + list(names))
    return rs.parse_packages(out)


def run_checks(module, checks):
    return dict((check["name"], module.run_command(check["argv"])[0]) for check in checks)


def record_path(params):
    return os.path.join(params["store"], params["role"] + ".json")


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write(path, data):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".role-state.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True, indent=1)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check(module):
    params = module.params
    path = record_path(params)
    saved = load(path)
    if saved and saved.get("digest") == params["digest"]:
        drift = rs.drift(saved, params["digest"], dict((p, path_state(p, rs.by_stat(want)))
                                                       for p, want in (saved.get("paths") or {}).items()),
                         read_units(module, sorted(saved.get("units") or {})),
                         read_packages(module, sorted(saved.get("packages") or {})),
                         run_checks(module, saved.get("checks") or []))
    else:
        drift = rs.drift(saved, params["digest"], {}, {}, {}, {})
    # What the role read itself before the check is drift like any other: the record goes with it.
    drift = drift + list(params["drift"])
    removed = False
    if drift and saved is not None and not module.check_mode:
        os.unlink(path)
        removed = True
    facts = (saved.get("facts") or {}) if not drift else {}
    checked = [c["name"] for c in saved.get("checks") or []] if not drift else []
    return dict(changed=False, converged=not drift, drift=drift, recorded=removed, facts=facts, checked=checked)


def record(module):
    params = module.params
    paths = dict((p, path_state(p)) for p in params["paths"])
    paths.update((p, path_state(p, by_stat=True)) for p in params["stat_paths"])
    saved = rs.record(params["role"], params["digest"], paths,
                      params["units"], read_packages(module, params["packages"]), params["checks"], params["facts"])
    missing = sorted(set(params["packages"]) - set(saved["packages"]))
    if missing:
        module.fail_json(msg="role_state %s: packages named to record are not installed: %s"
                         % (params["role"], ", ".join(missing)), changed=False)
    path = record_path(params)
    if module.check_mode or load(path) == saved:
        return dict(changed=False, converged=True, drift=[], recorded=False, facts=params["facts"])
    write(path, saved)
    return dict(changed=False, converged=True, drift=[], recorded=True, facts=params["facts"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True),
            state=dict(type="str", default="check", choices=["check", "record"]),
            inputs=dict(type="raw", no_log=True),
            digest=dict(type="str"),
            paths=dict(type="list", elements="str", default=[]),
            stat_paths=dict(type="list", elements="str", default=[]),
            units=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                enabled=dict(type="bool"),
                active=dict(type="bool"),
            )),
            packages=dict(type="list", elements="str", default=[]),
            checks=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                argv=dict(type="list", elements="str", required=True),
            )),
            facts=dict(type="dict", default={}),
            drift=dict(type="list", elements="str", default=[]),
            store=dict(type="path", default="/var/lib/sparkfleet/role-state"),
        ),
        supports_check_mode=True,
    )
    if module.params["inputs"] is not None or not module.params["digest"]:
        module.fail_json(msg="role_state: the inputs are digested by the collection's action plugin on the controller; "
                             "call it as sparkfleet.gb10.role_state (the module got no digest)", changed=False)
    try:
        result = check(module) if module.params["state"] == "check" else record(module)
    except OSError as err:
        module.fail_json(msg="role_state %s: %s" % (module.params["role"], to_text(err)), changed=False)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
