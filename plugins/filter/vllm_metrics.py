# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: vllm_metrics
author: sparkfleet.gb10 developers
short_description: The figures fleet_verify reports, read from the Prometheus text of vLLM's C(/metrics)
version_added: "0.1.0"
description:
  - Sums each sample of a metric over its label sets (one engine per served model in the collection's units).
  - Reads C(vllm:prefix_cache_hits_total), C(vllm:prefix_cache_queries_total) (the hit rate is hits / queries,
    C(None) before the first query), C(vllm:kv_cache_usage_perc) (a fraction 0..1),
    C(vllm:num_requests_running) and C(vllm:num_requests_waiting).
  - A metric the server does not expose is C(None), so a missing counter is told apart from a zero one.
options:
  _input:
    description: The body of C(GET /metrics).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Prefix-cache hit rate of an endpoint
  ansible.builtin.debug:
    msg: "{{ (__metrics.content | sparkfleet.gb10.vllm_metrics).prefix_cache_hit_rate }}"
"""

RETURN = r"""
_value:
  description: The figures, each C(None) when the metric is absent.
  type: dict
  contains:
    prefix_cache_hits: {description: Sum of vllm:prefix_cache_hits_total, type: float}
    prefix_cache_queries: {description: Sum of vllm:prefix_cache_queries_total, type: float}
    prefix_cache_hit_rate: {description: "hits / queries rounded to 3 places, None without queries", type: float}
    kv_cache_usage: {description: Highest vllm:kv_cache_usage_perc over the engines (0..1), type: float}
    requests_running: {description: Sum of vllm:num_requests_running, type: float}
    requests_waiting: {description: Sum of vllm:num_requests_waiting, type: float}
"""

from ansible.errors import AnsibleFilterError
# The parsing is shared with the module sparkfleet.gb10.vllm_verify, which reads /metrics on the host.
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_metrics import figures


def vllm_metrics(text):
    if not isinstance(text, str):
        raise AnsibleFilterError("vllm_metrics: expected the text of /metrics, got %s" % type(text).__name__)
    try:
        return figures(text)
    except ValueError as exc:
        raise AnsibleFilterError("vllm_metrics: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"vllm_metrics": vllm_metrics}
