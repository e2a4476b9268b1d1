#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: grub_next_boot
short_description: Make the next boot of a Spark start a given kernel, once (grub-reboot) or from now on (grub-set-default)
description:
  - Computes the kernel the next boot starts as GRUB computes it (C(plugins/module_utils/grub_boot.py), the
    entry C(grub.cfg) boots with the grubenv's C(next_entry) and C(saved_entry)). When it is not O(release), sets the
    grubenv's C(next_entry) to the entry of C(grub.cfg) that boots O(release) (C(grub-editenv <grubenv> set
    next_entry=<submenu id>><entry id>), what C(grub-reboot) writes), then computes the next boot again and fails
    unless it is O(release) now.
  - C(next_entry) is honoured whatever C(GRUB_DEFAULT) says (C(/etc/grub.d/00_header) writes it first) and cleared
    by GRUB as it boots it; the boot after that one is GRUB_DEFAULT's again.
  - What the OS update does after a stop past its upgrade (rule C(kernel_updates)), so that an unplanned reboot
    (a power cut, a person) starts the kernel the host runs now, not the one the proof refused; with
    C(os_update_boot_once), the boot of the proven kernel, once.
  - With O(once=false), sets the grubenv's C(saved_entry) instead (C(grub-set-default)), the entry GRUB boots from
    then on where C(grub.cfg) was written with C(GRUB_DEFAULT=saved) (refused otherwise, with the fix), and checks
    GRUB's default boot (without a pending C(next_entry)) is O(release). With C(os_update_boot_once) the proven
    kernel becomes the default only after its gates passed, and a kernel that panics falls back to it.
version_added: 0.1.0
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  release:
    description: The kernel release the next boot must start (the running one, C(uname -r)).
    type: str
    required: true
  boot_dir:
    description: Where the kernel images are.
    type: path
    default: /boot
  grub_dir:
    description: Where C(grub.cfg) and C(grubenv) are; empty, C(<boot_dir>/grub).
    type: path
    default: ""
  etc_default:
    description: The directory of GRUB's defaults (C(grub), C(grub.d/*.cfg)).
    type: path
    default: /etc/default
  grub_editenv:
    description: The grub-editenv program (package grub-common).
    type: str
    default: grub-editenv
  once:
    description: C(true), the grubenv's one-shot C(next_entry); C(false), its C(saved_entry), GRUB's default from now on.
    type: bool
    default: true
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
attributes:
  check_mode:
    description: Says whether it would set C(next_entry), and to what; writes nothing.
    support: full
  diff_mode:
    support: none
  idempotent:
    description: Nothing is written when the next boot already starts O(release).
    support: full
"""

EXAMPLES = r"""
- name: Boot the running kernel next, not the one the proof refused
  sparkfleet.gb10.grub_next_boot:
    release: "{{ os_update_installed.running_kernel }}"
"""

RETURN = r"""
next_entry:
  description: The C(next_entry) (with O(once=false), C(saved_entry)) written (or, in check mode, that would be); null when
    none was needed.
  type: str
  returned: always
before:
  description: The next boot before, as C(grub_boot.next_boot) computes it (C(release), C(by), C(path), ...).
  type: dict
  returned: always
next_boot:
  description: The next boot after (the same as RV(before) when nothing was written).
  type: dict
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.gb10.plugins.module_utils import grub_boot


def run(module):
    params = module.params
    grub_dir = params["grub_dir"] or os.path.join(params["boot_dir"], "grub")
    release = params["release"]
    variable = "next_entry" if params["once"] else "saved_entry"

    def compute():
        return grub_boot.next_boot(params["boot_dir"], grub_dir, params["etc_default"],
                                   mode="next" if params["once"] else "default")

    before = compute()
    if params["once"] and before["release"] == release:
        return dict(changed=False, next_entry=None, before=before, next_boot=before)
    cfg = os.path.join(grub_dir, "grub.cfg")
    try:
        with open(cfg) as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s" % (cfg, exc), before=before)
    menu = grub_boot.parse_grub_cfg(text)
    if not params["once"] and grub_boot.parse_cfg_default(text) != "saved":
        module.fail_json(msg="%s was not written with GRUB_DEFAULT=saved (it boots %s by default): saved_entry would "
                         "not be read. Set GRUB_DEFAULT=saved (os_update_boot_once writes it) and run update-grub"
                         % (cfg, before["release"]), before=before)
    spec = grub_boot.entry_spec(menu, release, lasting=not params["once"])
    if spec is None:
        module.fail_json(msg="no entry of %s boots kernel %s (the next boot starts %s): run update-grub, or reinstall "
                         "linux-image-%s" % (cfg, release, before["release"], release), before=before)
    # saved_entry must name that kernel's own entry: 0, or the top-level entry, boots it only while it is the newest
    env = grub_boot.read_grubenv(grub_boot.read_file(os.path.join(grub_dir, "grubenv")) or "")
    if not params["once"] and before["release"] == release and env.get("saved_entry") == spec:
        return dict(changed=False, next_entry=None, before=before, next_boot=before)
    if module.check_mode:
        return dict(changed=True, next_entry=spec, before=before, next_boot=before)
    program = module.get_bin_path(params["grub_editenv"], required=True)
    module.run_command([program, os.path.join(grub_dir, "grubenv"), "set", "%s=%s" % (variable, spec)], check_rc=True)
    after = compute()
    if after["release"] != release or not (params["once"] or after["by"] == "saved_entry"):
        module.fail_json(msg="set %s=%s in %s, and GRUB would still boot %s, not %s (%s)"
                         % (variable, spec, os.path.join(grub_dir, "grubenv"), after["release"], release,
                            after.get("reason") or after.get("by")), before=before, next_boot=after)
    return dict(changed=True, next_entry=spec, before=before, next_boot=after)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            release=dict(type="str", required=True),
            boot_dir=dict(type="path", default="/boot"),
            grub_dir=dict(type="path", default=""),
            etc_default=dict(type="path", default="/etc/default"),
            grub_editenv=dict(type="str", default="grub-editenv"),
            once=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
