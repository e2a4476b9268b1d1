#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Write the benchmark's report, chart and figures on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: benchmark_report
short_description: Write the fleet benchmark's Markdown report, its chart of tok/s against concurrency and its figures
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.no_diff
description:
  - Run on the controller (delegated to localhost) by C(playbooks/benchmark.yml) with the summary of every
    model's concurrency sweep (C(sparkfleet.gb10.benchmark_summary)).
  - Writes C(report.md) (per model and concurrency the output tokens per second, per stream, requests per second,
    TTFT and inter-token latency at p50 and p99, failed requests, and for a Spark's figures the share of the decode
    roofline and of the published figure, with the warnings), C(tok_s.png) (output tok/s against concurrency, one
    line per model, the published figures as markers) and C(results.json) (the summaries) into O(dest).
  - The chart needs matplotlib on the controller (in the collection's C(requirements.txt)); without it the report
    and the figures are still written and the module warns.
options:
  models:
    description: The summary of each model (see C(plugins/module_utils/benchmark.py) C(summary)).
    type: list
    elements: dict
    required: true
  dest:
    description: Directory to write into (made when missing, mode 0755).
    type: path
    required: true
  title:
    description: Title of the report and the chart.
    type: str
    default: Benchmark
  settings:
    description: The sweep's settings (input_len, output_len, rounds, min_prompts), shown in the report.
    type: dict
    default: {}
  generated:
    description: When the sweep ran, shown in the report.
    type: str
    default: ""
  merge:
    description:
      - Keep the models of O(dest)'s C(results.json) that this sweep did not run (another host, a run limited to some
        models), each with when it ran; a model this sweep ran replaces its old figures.
    type: bool
    default: false
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Write the report and the chart on the controller
  sparkfleet.gb10.benchmark_report:
    models: "{{ summaries }}"
    dest: ~/.sparkfleet/two-spark/benchmark
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
report:
  description: Path of the Markdown report.
  returned: always
  type: str
chart:
  description: Path of the chart, or empty where matplotlib is missing.
  returned: always
  type: str
figures:
  description: Path of the summaries as JSON.
  returned: always
  type: str
markdown:
  description: The report's lines.
  returned: always
  type: list
  elements: str
"""

import io
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.benchmark import markdown

CHART = "tok_s.png"


def chart_png(models, title):
    """The chart as PNG bytes: output tok/s against concurrency, one line per model (log2 concurrency axis), the
    published figures as hollow markers and each model's single-stream decode roofline as a dotted level.
    ImportError where matplotlib is missing."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4.8), dpi=100)
    for model in models:
        measured = [p for p in model["points"] if p.get("output_tok_s") is not None]
        if not measured:
            continue
        label = model["name"] + (" (simulated)" if model["simulated"] else "")
        line, = axes.plot([p["concurrency"] for p in measured], [p["output_tok_s"] for p in measured],
                          marker="o", label=label)
        figure_ = model.get("published")
        if figure_:
            field = sorted((int(c), v if isinstance(v, (int, float)) else v[0])
                           for c, v in figure_["output_tok_s"].items())
            axes.plot([c for c, _v in field], [v for _c, v in field], linestyle="none", marker="s",
                      markerfacecolor="none", color=line.get_color(), label="%s published" % model["name"])
        bound = model.get("roofline_tok_s")
        if bound:
            axes.axhline(bound, linestyle=":", color=line.get_color(), linewidth=1,
                         label="%s decode roofline, one stream" % model["name"])
    axes.set_xscale("log", base=2)
    concurrencies = sorted({p["concurrency"] for m in models for p in m["points"]})
    if concurrencies:
        axes.set_xticks(concurrencies)
        axes.set_xticklabels([str(c) for c in concurrencies])
    axes.set_xlabel("concurrent requests")
    axes.set_ylabel("output tokens/s (all streams)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    buffer = io.BytesIO()
    # A fixed date keeps the bytes the same for the same figures (a rerun of an unchanged sweep changes nothing).
    figure.savefig(buffer, format="png", metadata={"Software": None})
    pyplot.close(figure)
    return buffer.getvalue()


def merged(new, figures_path):
    """``new`` summaries with the ones of ``figures_path`` this sweep did not run (by host and name), sorted."""
    try:
        with open(figures_path) as handle:
            old = json.load(handle).get("models") or []
    except (OSError, ValueError, AttributeError):
        old = []
    ran = {(m.get("host"), m.get("name")) for m in new}
    kept = [m for m in old if isinstance(m, dict) and (m.get("host"), m.get("name")) not in ran]
    return sorted(kept + list(new), key=lambda m: (str(m.get("name")), str(m.get("host"))))


def _write(path, data, check_mode):
    """Write ``data`` (bytes) to ``path`` unless it holds them already; True when it changed."""
    try:
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    except OSError:
        pass
    if not check_mode:
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
        os.chmod(path + ".tmp", 0o644)
        os.replace(path + ".tmp", path)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            models=dict(type="list", elements="dict", required=True),
            dest=dict(type="path", required=True),
            title=dict(type="str", default="Benchmark"),
            settings=dict(type="dict", default={}),
            generated=dict(type="str", default=""),
            merge=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    dest = p["dest"]
    if not module.check_mode:
        os.makedirs(dest, mode=0o755, exist_ok=True)
    chart_path, warnings, changed = os.path.join(dest, CHART), [], False
    report_path = os.path.join(dest, "report.md")
    figures_path = os.path.join(dest, "results.json")
    models = merged(p["models"], figures_path) if p["merge"] else p["models"]
    try:
        png = chart_png(models, p["title"])
    except ImportError as exc:
        png, chart_path = None, ""
        warnings.append("no chart: matplotlib is missing on the controller (%s); pip install -r requirements.txt "
                        "of the collection" % exc)
    if png is not None:
        changed |= _write(chart_path, png, module.check_mode)
    text = markdown(models, title=p["title"], settings=p["settings"], generated=p["generated"],
                    chart=CHART if png is not None else None)
    changed |= _write(report_path, text.encode("utf-8"), module.check_mode)
    changed |= _write(figures_path, (json.dumps({"generated": p["generated"], "settings": p["settings"],
                                                 "models": models}, indent=2, sort_keys=True) + "\n")
                      .encode("utf-8"), module.check_mode)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=changed, report=report_path, chart=chart_path, figures=figures_path,
                     markdown=text.splitlines())


if __name__ == "__main__":
    main()
