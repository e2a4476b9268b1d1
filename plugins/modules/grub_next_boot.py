#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: grub_next_boot
short_description: Make the next boot of a Spark start a given kernel, once, as grub-reboot does
description:
  - Computes the kernel the next boot starts as GRUB computes it (C(plugins/module_utils/grub_boot.py), the
    entry C(grub.cfg) boots with the grubenv's C(next_entry) and C(saved_entry)). When it is not O(release), sets the
    grubenv's C(next_entry) to the entry of C(grub.cfg) that boots O(release) (C(grub-editenv <grubenv> set
    next_entry=<submenu id>><entry id>), what C(grub-reboot) writes), then computes the next boot again and fails
    unless it is O(release) now.
  - C(next_entry) is honoured whatever C(GRUB_DEFAULT) says (C(/etc/grub.d/00_header) writes it first) and cleared
    by GRUB as it boots it; the boot after that one is GRUB_DEFAULT's again.
  - What the OS update does after a stop past its upgrade (rule C(kernel_updates)), so that an unplanned reboot
    (a power cut, a person) starts the kernel the host runs now, not the one the proof refused.
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
  description: The C(next_entry) written (or, in check mode, that would be); null when none was needed.
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

    def compute():
        return grub_boot.next_boot(params["boot_dir"], grub_dir, params["etc_default"])

    before = compute()
    if before["release"] == release:
        return dict(changed=False, next_entry=None, before=before, next_boot=before)
    cfg = os.path.join(grub_dir, "grub.cfg")
    try:
        with open(cfg) as handle:
            menu = grub_boot.parse_grub_cfg(handle.read())
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s" % (cfg, exc), before=before)
    spec = grub_boot.entry_spec(menu, release)
    if spec is None:
        module.fail_json(msg="no entry of %s boots kernel %s (the next boot starts %s): run update-grub, or reinstall "
                         "linux-image-%s" % (cfg, release, before["release"], release), before=before)
    if module.check_mode:
        return dict(changed=True, next_entry=spec, before=before, next_boot=before)
    program = module.get_bin_path(params["grub_editenv"], required=True)
    module.run_command([program, os.path.join(grub_dir, "grubenv"), "set", "next_entry=" + spec], check_rc=True)
    after = compute()
    if after["release"] != release:
        module.fail_json(msg="set next_entry=%s in %s, and GRUB would still boot %s, not %s (%s)"
                         % (spec, os.path.join(grub_dir, "grubenv"), after["release"], release,
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
        ),
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
