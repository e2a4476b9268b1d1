#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_account
short_description: The system group and account a service runs as, settled in one call
description:
  - Makes sure a system group exists, and a system account in it with the given shell and home directory
    (created when missing, owned by the account, mode O(home_mode)). What already exists is left alone; an existing
    account whose primary group, shell or home directory differ is changed with C(usermod) (its home is not moved);
    a home of another owner is handed to the account; a home of another mode gets O(home_mode).
  - One round trip instead of an M(ansible.builtin.group) and an M(ansible.builtin.user) task. Used by
    C(sparkfleet.gb10.ray) and C(vllm_service), which run as the same account by default
    (the fleet default C(service_user)), so the account's shape is written here once.
  - Uses C(groupadd), C(useradd) and C(usermod) (the shadow tools of Debian and Ubuntu).
version_added: "0.1.0"
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  name:
    description: The account.
    type: str
    required: true
  group:
    description: Its primary group, a system group. Default the account's name.
    type: str
  home:
    description: Its home directory. Default C(/var/lib/<name>).
    type: path
  shell:
    description: Its login shell.
    type: path
    default: /usr/sbin/nologin
  home_mode:
    description:
      - The home directory's mode, set whoever made it (C(useradd --create-home) makes 0750 on Ubuntu 24.04 and 0755
        on Debian).
      - The default lets others pass through the home but not list it, because the model store lies under it
        (C(/var/lib/sparkfleet/models)) and the store's rsync daemon, root with no capability to override file
        permissions, must pass through it to chroot into the store; with 0750 its chroot is refused.
    type: str
    default: "0751"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
attributes:
  check_mode:
    description: Says what it would change and changes nothing.
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Create the service group and account
  sparkfleet.gb10.service_account:
    name: sparkfleet
    group: sparkfleet
"""

RETURN = r"""
changes:
  description: What was (in check mode, would be) changed, in order.
  returned: always
  type: list
  elements: str
  sample: [group sparkfleet created, account sparkfleet created]
commands:
  description: The commands that made the changes (none when nothing changed).
  returned: always
  type: list
  elements: list
"""

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule


def _lookup(getter, key):
    try:
        return getter(key)
    except KeyError:
        return None


def plan(want, group_entry, user_entry, home_exists, home_foreign=False, home_mode=None):
    """``(changes, commands)`` that bring the host from what it has to ``want`` ({name, group, home, shell, mode}).
    ``group_entry``: the group's (name, gid) or None; ``user_entry``: the account's (gid, home, shell) or None;
    ``home_foreign``: the home exists but is not the account's (another role made the directory first, e.g.
    the model store under /var/lib/<name>): useradd would leave it to root, so it is handed over;
    ``home_mode``: the existing home's mode (``0750``), None when unknown."""
    changes, commands = [], []
    chmod = ["chmod", want["mode"], want["home"]]
    adopt = [chmod, ["chown", "%s:%s" % (want["name"], want["group"]), want["home"]]]
    if group_entry is None:
        changes.append("group %s created" % want["group"])
        commands.append(["groupadd", "--system", want["group"]])
    if user_entry is None:
        changes.append("account %s created" % want["name"])
        commands.append(["useradd", "--system", "--gid", want["group"], "--shell", want["shell"],
                         "--home-dir", want["home"], "--create-home", want["name"]])
        if home_exists:
            changes.append("home %s handed to %s" % (want["home"], want["name"]))
            commands.extend(adopt)
        else:
            # useradd's mode for a new home is the distribution's (login.defs HOME_MODE).
            commands.append(chmod)
        return changes, commands
    argv = []
    gid, home, shell = user_entry
    if group_entry is None or gid != group_entry[1]:
        changes.append("primary group of %s set to %s" % (want["name"], want["group"]))
        argv += ["--gid", want["group"]]
    if shell != want["shell"]:
        changes.append("shell of %s set to %s (was %s)" % (want["name"], want["shell"], shell))
        argv += ["--shell", want["shell"]]
    if home != want["home"]:
        changes.append("home of %s set to %s (was %s)" % (want["name"], want["home"], home))
        argv += ["--home", want["home"]]
    if argv:
        commands.append(["usermod"] + argv + [want["name"]])
    if not home_exists:
        changes.append("home %s created" % want["home"])
        commands.append(["mkdir", "-p", "-m", want["mode"], want["home"]])
        commands.append(["chown", "%s:%s" % (want["name"], want["group"]), want["home"]])
    elif home_foreign:
        changes.append("home %s handed to %s" % (want["home"], want["name"]))
        commands.extend(adopt)
    elif home_mode is not None and home_mode != want["mode"]:
        changes.append("mode of home %s set to %s (was %s)" % (want["home"], want["mode"], home_mode))
        commands.append(chmod)
    return changes, commands


def main():
    module = AnsibleModule(argument_spec={"name": {"type": "str", "required": True},
                                          "group": {"type": "str"},
                                          "home": {"type": "path"},
                                          "shell": {"type": "path", "default": "/usr/sbin/nologin"},
                                          "home_mode": {"type": "str", "default": "0751"}},
                           supports_check_mode=True)
    p = module.params
    want = {"name": p["name"], "group": p["group"] or p["name"], "home": p["home"] or "/var/lib/" + p["name"],
            "shell": p["shell"], "mode": p["home_mode"]}
    try:
        want["mode"] = "%04o" % int(want["mode"], 8)
    except ValueError:
        module.fail_json(msg="home_mode %r is not an octal mode; write it as 0751" % p["home_mode"])
    group = _lookup(grp.getgrnam, want["group"])
    user = _lookup(pwd.getpwnam, want["name"])
    try:
        home = os.stat(want["home"])
    except OSError:
        home = None
    changes, commands = plan(want, None if group is None else (group.gr_name, group.gr_gid),
                             None if user is None else (user.pw_gid, user.pw_dir, user.pw_shell),
                             home is not None, home is not None and user is not None and home.st_uid != user.pw_uid,
                             None if home is None else "%04o" % stat.S_IMODE(home.st_mode))
    if commands and not module.check_mode:
        for argv in commands:
            argv = [module.get_bin_path(argv[0], required=True)] + argv[1:]
            rc, out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()),
                                 changes=changes, commands=commands)
    module.exit_json(changed=bool(commands), changes=changes, commands=commands)


if __name__ == "__main__":
    main()
