# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters plan_endpoints, plan_nccl_units, drain_phases, drain_retry_reads and drain_retry_timers: what the roles
that check or drain a host read from its part of the fleet plan (documented in the .yml files of those names beside
this file); the logic is plugins/module_utils/host_plan.py."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import host_plan as hp


def plan_endpoints(view):
    return hp.endpoints(view)


def plan_nccl_units(view, ray_head_unit, ray_worker_unit):
    return hp.nccl_units(view, ray_head_unit, ray_worker_unit)


def drain_phases(view, ray_head_unit, ray_worker_unit):
    return hp.drain_phases(view, ray_head_unit, ray_worker_unit)


def drain_retry_reads(vllm_units):
    return hp.retry_reads(vllm_units)


def drain_retry_timers(read):
    return hp.retry_timers(read)


class FilterModule(object):

    def filters(self):
        return {"plan_endpoints": plan_endpoints, "plan_nccl_units": plan_nccl_units, "drain_phases": drain_phases,
                "drain_retry_reads": drain_retry_reads, "drain_retry_timers": drain_retry_timers}
