# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters vllm_args and vllm_env_check (documented in vllm_args.yml and vllm_env_check.yml beside this file);
the logic is plugins/module_utils/vllm_args.py, which the preflight action calls too."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_args as impl
# What tests and tools read from here (the one home is plugins/module_utils/vllm_args.py).
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_args import MANAGED_FLAGS, check_entry  # noqa: F401  pylint: disable=unused-import


def vllm_args(model_entry, gb10_facts, cluster, host=None):
    try:
        return impl.vllm_args(model_entry, gb10_facts, cluster, host=host)
    except impl.ArgsError as exc:
        raise AnsibleFilterError(redaction.refusal(str(exc), model_entry, cluster))


def vllm_env_check(env, host=None, variable="vllm_service_environment"):
    try:
        return impl.vllm_env_check(env, host=host, variable=variable)
    except impl.ArgsError as exc:
        raise AnsibleFilterError(redaction.refusal(str(exc), env))


class FilterModule(object):

    def filters(self):
        return {
            "vllm_args": vllm_args,
            "vllm_env_check": vllm_env_check,
        }
