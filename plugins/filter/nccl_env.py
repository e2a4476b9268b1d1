# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters nccl_env, nccl_env_vars and qsfp_second_half (each documented in its .yml beside this file); the
logic is plugins/module_utils/nccl_env.py, which the preflight action calls too."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_env as impl
from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction


def nccl_env(gb10_facts, fabric, host=None):
    try:
        return impl.nccl_env(gb10_facts, fabric, host=host)
    except impl.NcclEnvError as exc:
        raise AnsibleFilterError(redaction.refusal(str(exc), fabric))


def nccl_env_vars(gb10_facts, fabric, host=None):
    return nccl_env(gb10_facts, fabric, host=host)["env"]


def qsfp_second_half(interface):
    return impl.second_half(interface)


class FilterModule(object):

    def filters(self):
        return {
            "nccl_env": nccl_env,
            "nccl_env_vars": nccl_env_vars,
            "qsfp_second_half": qsfp_second_half,
        }
