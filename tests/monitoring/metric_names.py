# -*- coding: utf-8 -*-
"""The metric names the collection's alert rules and dashboard may use, from their sources.

* the health probe's METRICS (roles/fleet_health/files/sparkfleet-health-probe.py),
  imported, not copied;
* the metrics the pinned vLLM release defines, read from the code of the wheel
  `make upstream` fetched and checked (${SPARKFLEET_CACHE}/upstream/wheels/
  vllm-<rule book vllm_version>-*.whl): every call with a literal name="vllm:..."
  whose callee is a Gauge, Counter or Histogram class, turned into the names
  prometheus_client exposes (counters get _total, histograms _bucket/_sum/_count);
* the metric names a PromQL expression reads.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(TOP, "roles", "fleet_health", "files", "sparkfleet-health-probe.py")
CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"


def load_probe():
    spec = importlib.util.spec_from_file_location("sparkfleet_health_probe", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe_metric_names():
    return set(load_probe().METRICS)


def vllm_version():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook  # noqa: E402  pure Python
    return rulebook.setting("vllm_version")


def vllm_wheel(version=None):
    version = version or vllm_version()
    found = sorted(glob.glob(os.path.join(CACHE, "upstream", "wheels", "vllm-%s-*.whl" % version)))
    if not found:
        raise FileNotFoundError("no vllm-%s wheel in %s/upstream/wheels: run `make upstream` "
                                "(tools/contract_setup.py) first" % (version, CACHE))
    return found[0]


def _kind(func):
    """gauge/counter/histogram from the callee's name (Gauge, self._counter_cls, prometheus_client.Histogram)."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    name = name.lower()
    for kind in ("gauge", "counter", "histogram"):
        if kind in name:
            return kind
    return None


def defined_metrics(source):
    """{name: kind} of the literal name="vllm:..." metric definitions in one Python source."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if (keyword.arg == "name" and isinstance(keyword.value, ast.Constant)
                    and isinstance(keyword.value.value, str) and keyword.value.value.startswith("vllm:")):
                kind = _kind(node.func)
                if kind:
                    found[keyword.value.value] = kind
    return found


def exposed_names(name, kind):
    """What prometheus_client puts on /metrics for one metric."""
    if kind == "counter":
        base = name[:-len("_total")] if name.endswith("_total") else name
        return {base + "_total", base + "_created"}
    if kind == "histogram":
        return {name + "_bucket", name + "_sum", name + "_count", name + "_created"}
    return {name}


def vllm_metric_definitions(wheel=None):
    """{name: kind} of every metric the release's code defines."""
    found = {}
    with zipfile.ZipFile(wheel or vllm_wheel()) as archive:
        for member in archive.namelist():
            if member.startswith("vllm/") and member.endswith(".py"):
                data = archive.read(member)
                if b"vllm:" in data:
                    found.update(defined_metrics(data.decode("utf-8", "replace")))
    return found


def vllm_exposed_names(definitions=None):
    definitions = vllm_metric_definitions() if definitions is None else definitions
    names = set()
    for name, kind in definitions.items():
        names |= exposed_names(name, kind)
    return names


KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan", "atan2"}


def promql_metric_names(expr):
    """The metric names a PromQL expression selects (not functions, labels, keywords or durations)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w:.$])[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        if text[match.end():].lstrip().startswith("("):
            continue
        if match.group(0).lower() in KEYWORDS:
            continue
        names.add(match.group(0))
    return names


def grafana_queries(dashboard):
    """Every PromQL query of a dashboard: the panels' (and rows' nested panels') targets and the templating queries."""
    queries = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                if target.get("expr"):
                    queries.append((panel.get("title", "?"), target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if query:
            match = re.match(r"^\s*label_values\((.*),\s*\w+\)\s*$", query)
            queries.append(("variable " + variable.get("name", "?"), match.group(1) if match else query))
    return queries
