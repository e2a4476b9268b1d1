# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters benchmark_argv, benchmark_point, benchmark_summary, benchmark_concurrency, benchmark_models,
benchmark_endpoints and benchmark_settings (documented in the .yml files of those names beside this file); the logic
is plugins/module_utils/benchmark.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import benchmark as impl


def benchmark_argv(endpoint, vllm_bin, concurrency, settings, result_dir, model_store_dir):
    entry = endpoint.get("model") or {}
    target = {"name": entry.get("name", endpoint.get("name")), "call_address": endpoint["call_address"],
              "port": endpoint["port"], "served_name": endpoint["served_name"],
              "tokenizer": impl.tokenizer_of(entry, model_store_dir),
              "trust_remote_code": bool(entry.get("trust_remote_code"))}
    return impl.bench_argv(vllm_bin, target, concurrency, settings, result_dir)


def benchmark_point(result, errors=None):
    if not isinstance(result, dict):
        raise AnsibleFilterError("benchmark_point: a vllm bench serve result must be a mapping, got %r" % (result,))
    return impl.point(result, errors)


def benchmark_summary(points, endpoint, compare=True, settings=None, host=None):
    settings = settings or {}
    context = int(settings.get("input_len") or 0) + int(settings.get("output_len") or 0) // 2
    entry = dict(endpoint.get("model") or {}, served_name=endpoint.get("served_name"))
    return impl.summary(entry.get("name"), entry, points, compare=compare, context_tokens=context, host=host)


def benchmark_concurrency(value):
    return impl.concurrencies(value)


def benchmark_models(value):
    return impl.model_names(value)


def benchmark_endpoints(endpoints, models):
    return impl.endpoints_of(endpoints, models)


def benchmark_settings(values):
    return impl.sweep_settings(values)


class FilterModule(object):

    def filters(self):
        return {"benchmark_argv": benchmark_argv, "benchmark_point": benchmark_point,
                "benchmark_summary": benchmark_summary, "benchmark_concurrency": benchmark_concurrency,
                "benchmark_models": benchmark_models, "benchmark_endpoints": benchmark_endpoints,
                "benchmark_settings": benchmark_settings}
