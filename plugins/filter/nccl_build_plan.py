# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_build_plan
author: sparkfleet.gb10 developers
short_description: Which host of each group of identical hosts builds NCCL, and who receives its prefix
version_added: "0.1.0"
description:
  - "Input is C({host: {stamp, tests, address, enabled}}) for the hosts of the play, in play order: the
    build stamp the nccl role would write, the nccl-tests inputs (C({revision, make_args}), or null),
    the host's fabric address and nccl_build_once. A host without input (null) takes no part."
  - Hosts with the same stamp and nccl-tests inputs form a build group
    (C(plugins/module_utils/nccl_build.py)); the first of them builds, the others receive the
    installed prefix from its fabric address. A host with nccl_build_once false or without a
    fabric address builds for itself (role C(solo)).
options:
  _input:
    description: "C({host: {stamp, tests, address, enabled}})."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Group the play's hosts by their NCCL build
  ansible.builtin.set_fact:
    _plan: "{{ inputs | sparkfleet.gb10.nccl_build_plan }}"
"""

RETURN = r"""
_value:
  description: "C({host: {key, role, builder, builder_address, receivers}}), role C(build), C(receive) or C(solo)."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_build


def nccl_build_plan(hosts):
    try:
        return nccl_build.plan(hosts)
    except ValueError as exc:
        raise AnsibleFilterError("nccl_build_plan: %s" % exc)


class FilterModule(object):

    def filters(self):
        return {"nccl_build_plan": nccl_build_plan}
