# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The figures fleet_verify reports, read from the Prometheus text of vLLM's ``/metrics``.

Shared by the filter ``vllm_metrics`` and the module ``vllm_verify`` (the endpoint gate of fleet_verify, which
reads ``/metrics`` on the host). Each sample of a metric is summed over its label sets (one engine per served
model in the collection's units); a metric the server does not expose is None, so a missing counter is told
apart from a zero one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

# name{labels} value [timestamp]; the Prometheus text exposition format.
SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)")

SUMMED = {
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
    "requests_running": "vllm:num_requests_running",
    "requests_waiting": "vllm:num_requests_waiting",
}
HIGHEST = {"kv_cache_usage": "vllm:kv_cache_usage_perc"}


def samples(text):
    """{metric name: [values]} of every sample line."""
    found = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if match is None:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        if not math.isnan(value):
            found.setdefault(match.group("name"), []).append(value)
    return found


def figures(text):
    """The figures of the /metrics text ``text`` (prefix_cache_hits, prefix_cache_queries, prefix_cache_hit_rate,
    kv_cache_usage, requests_running, requests_waiting), each None when its metric is absent; the hit rate is
    hits / queries rounded to 3 places, None before the first query. ValueError when ``text`` holds no vllm:
    metric (not the /metrics of a vLLM server)."""
    found = samples(text)
    if not any(name.startswith("vllm:") for name in found):
        raise ValueError("no vllm: metric in the input (not the /metrics of a vLLM server)")
    result = dict((key, sum(found[name]) if name in found else None) for key, name in SUMMED.items())
    result.update((key, max(found[name]) if name in found else None) for key, name in HIGHEST.items())
    queries = result["prefix_cache_queries"]
    result["prefix_cache_hit_rate"] = (round(result["prefix_cache_hits"] / queries, 3)
                                       if queries and result["prefix_cache_hits"] is not None else None)
    return result
