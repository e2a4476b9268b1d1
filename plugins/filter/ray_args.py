# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters ray_args and ray_env (documented in ray_args.yml and ray_env.yml beside this file); the logic is
plugins/module_utils/ray_args.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import ray_args as impl
from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction


def ray_args(role, ray_bin, node_ip, ports, num_gpus, num_cpus=0, object_store_memory=0, extra_args=None,
             head_address=None, include_dashboard=True, dashboard_host="127.0.0.1"):
    try:
        return impl.ray_args(role, ray_bin, node_ip, ports, num_gpus, num_cpus, object_store_memory, extra_args or [],
                             head_address, include_dashboard, dashboard_host)
    except impl.RayArgsError as exc:
        raise AnsibleFilterError(redaction.refusal(str(exc), extra_args))


def ray_env(node_ip, user, auth_token_file, nccl_env=None, environment=None):
    return impl.ray_env(node_ip, user, auth_token_file, nccl_env, environment)


class FilterModule(object):

    def filters(self):
        return {"ray_args": ray_args, "ray_env": ray_env}
