# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: rsyncd_conf
author: sparkfleet.gb10 developers
short_description: The rsyncd.conf of a read-only share on the fabric (model store, NCCL prefix)
version_added: "0.1.0"
description:
  - One shape for every rsync daemon the collection runs to carry files between hosts over the
    fabric - the model store's copy of the models and the NCCL builder's installed prefix - so a
    hardening of one (chroot, nobody, no listing, an allow list of fabric addresses and deny for
    everyone else, transfer logging that the scenarios read) holds for both.
options:
  _input:
    description: >-
      C(address) and C(port) to bind, C(log_file), C(module) (name), C(path), C(hosts_allow)
      (fabric addresses), C(exclude) (patterns), optional C(comment) and C(max_connections).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the daemon's configuration
  ansible.builtin.copy:
    content: "{{ {'address': addr, 'port': 8873, 'log_file': log, 'module': 'share', 'path': dir,
                  'hosts_allow': peers, 'exclude': []} | sparkfleet.gb10.rsyncd_conf }}"
    dest: /etc/share-rsyncd.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The configuration text (global section, then the one read-only module).
  type: str
"""

from ansible.errors import AnsibleFilterError

REQUIRED = ("address", "port", "log_file", "module", "path", "hosts_allow", "exclude")


def rsyncd_conf(share):
    missing = [key for key in REQUIRED if share.get(key) in (None, "")]
    allow = [str(a) for a in share.get("hosts_allow") or [] if a]
    if missing or not allow:
        raise AnsibleFilterError("rsyncd_conf: %s" % ("missing %s" % ", ".join(missing) if missing
                                                      else "no host may connect (hosts_allow is empty)"))
    lines = ["address = %s" % share["address"], "port = %s" % share["port"], "use chroot = yes",
             "uid = nobody", "gid = nogroup"]
    if share.get("max_connections"):
        lines.append("max connections = %s" % share["max_connections"])
    lines += ["reverse lookup = no", "log file = %s" % share["log_file"], "transfer logging = yes",
              "log format = %a %o %m/%f %l", "", "[%s]" % share["module"], "path = %s" % share["path"]]
    if share.get("comment"):
        lines.append("comment = %s" % share["comment"])
    lines += ["read only = yes", "list = no", "hosts allow = %s" % " ".join(allow), "hosts deny = *"]
    if share["exclude"]:
        lines.append("exclude = %s" % " ".join(share["exclude"]))
    return "\n".join(lines) + "\n"


class FilterModule(object):

    def filters(self):
        return {"rsyncd_conf": rsyncd_conf}
