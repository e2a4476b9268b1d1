# -*- coding: utf-8 -*-
"""The shipped alert rules and Grafana dashboard read only metrics that exist.

Run by `make monitoring` (part of `make test`), after promtool check/test rules.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

import metric_names as mn

RULES = os.path.join(mn.TOP, "monitoring", "prometheus", "sparkfleet.rules.yml")
DASHBOARD = os.path.join(mn.TOP, "monitoring", "grafana", "sparkfleet-fleet.json")
REQUIRED_ALERTS = {
    "SparkfleetEndpointDown", "SparkfleetCrashLoop", "SparkfleetRayMemberMissing", "SparkfleetDriverModuleMismatch",
    "SparkfleetFabricMtuWrong", "SparkfleetPrefixCacheHitRateLow", "SparkfleetKvCacheUsageHigh",
    "SparkfleetNextBootKernelWithoutGpu", "SparkfleetNextBootKernelKnownBad", "SparkfleetDoNotReboot",
}


@pytest.fixture(scope="module")
def vllm_definitions():
    return mn.vllm_metric_definitions()


@pytest.fixture(scope="module")
def known(vllm_definitions):
    return mn.probe_metric_names() | mn.vllm_exposed_names(vllm_definitions)


@pytest.mark.parametrize("expr,names", [
    ("sparkfleet_vllm_endpoint_up == 0", {"sparkfleet_vllm_endpoint_up"}),
    ('sum by (instance, model_name) (rate(vllm:prefix_cache_hits_total{instance=~"a:.*"}[30m])) '
     "/ sum by (instance, model_name) (rate(vllm:prefix_cache_queries_total[$__rate_interval]))",
     {"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"}),
    ("histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
     {"vllm:time_to_first_token_seconds_bucket"}),
    ("time() - sparkfleet_health_probe_last_run_timestamp_seconds > 1800 offset 5m",
     {"sparkfleet_health_probe_last_run_timestamp_seconds"}),
    ("a < on (instance) group_left (x) b or c unless d", {"a", "b", "c", "d"}),
])
def test_promql_metric_names(expr, names):
    assert mn.promql_metric_names(expr) == names


def test_counter_and_histogram_exposition():
    assert mn.exposed_names("vllm:prefix_cache_hits", "counter") >= {"vllm:prefix_cache_hits_total"}
    assert "vllm:prefix_cache_hits" not in mn.exposed_names("vllm:prefix_cache_hits", "counter")
    assert mn.exposed_names("vllm:ttft", "histogram") >= {"vllm:ttft_bucket", "vllm:ttft_sum", "vllm:ttft_count"}
    assert mn.exposed_names("vllm:kv", "gauge") == {"vllm:kv"}


def test_definitions_are_read_from_code():
    source = (
        "g = self._gauge_cls(name='vllm:x_perc', documentation='d')\n"
        "c = prometheus_client.Counter(name='vllm:y', documentation='d')\n"
        "h = Histogram(name='vllm:z_seconds')\n"
        "other = dict(name='vllm:not_a_metric')\n"
    )
    assert mn.defined_metrics(source) == {"vllm:x_perc": "gauge", "vllm:y": "counter", "vllm:z_seconds": "histogram"}


def test_the_pinned_vllm_defines_what_the_alerts_rely_on(vllm_definitions):
    # The names the rules and the dashboard are built on, with the kind that decides their exposed name.
    relied_on = {"vllm:kv_cache_usage_perc": "gauge", "vllm:num_requests_running": "gauge",
                 "vllm:num_requests_waiting": "gauge", "vllm:prefix_cache_hits": "counter",
                 "vllm:prefix_cache_queries": "counter", "vllm:time_to_first_token_seconds": "histogram"}
    assert {name: vllm_definitions.get(name) for name in relied_on} == relied_on


def _rules():
    with open(RULES) as handle:
        return [rule for group in yaml.safe_load(handle)["groups"] for rule in group["rules"]]


def test_every_required_alert_is_there():
    assert REQUIRED_ALERTS <= {rule.get("alert") for rule in _rules()}


def test_alert_rules_read_only_real_metrics(known):
    unknown = {}
    for rule in _rules():
        names = mn.promql_metric_names(rule["expr"])
        assert names, "%s reads no metric" % rule["alert"]
        if names - known:
            unknown[rule["alert"]] = sorted(names - known)
    assert not unknown, "metrics neither the probe writes nor vLLM %s exposes: %s" % (mn.vllm_version(), unknown)


def test_dashboard_reads_only_real_metrics(known):
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    queries = mn.grafana_queries(dashboard)
    assert len(queries) >= 10
    unknown = {}
    used = set()
    for title, expr in queries:
        names = mn.promql_metric_names(expr)
        assert names, "%s: %r reads no metric" % (title, expr)
        used |= names
        if names - known:
            unknown[title] = sorted(names - known)
    assert not unknown, "metrics neither the probe writes nor vLLM %s exposes: %s" % (mn.vllm_version(), unknown)
    # Every metric the probe writes has a panel.
    assert mn.probe_metric_names() <= used, sorted(mn.probe_metric_names() - used)


def test_dashboard_panels_are_unique_and_placed():
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"]), panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
