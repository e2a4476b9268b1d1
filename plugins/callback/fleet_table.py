# -*- coding: utf-8 -*-
# Apache-2.0
"""One compact table of the fleet at the end of a playbook run."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_table
type: aggregate
short_description: Prints one compact table of the fleet at the end of site.yml and verify.yml
version_added: "0.1.0"
description:
  - Collects the C(sparkfleet_fleet_row) fact that the summary play of C(playbooks/verify.yml) sets on each host
    (driver, fabric address and MTU, NCCL, what the GPU gate read (C(sm12.1/cuda12.9) on a Spark, C(cpu-form) where
    the simulated fleet's CPU build was checked without CUDA), Ray role and members, each model with its endpoint, state and
    gpu-memory-utilization, the tokens/s of the verify completion, which correctness check its answers passed
    (C(answers 3/3) for the rule book's known answers, C(same twice) for the determinism check alone) and the
    headline of the last benchmark sweep (output tok/s at the lowest concurrency and at the best, e.g.
    C(17.0@c1 36.4@c4))) and prints one table after the play recap,
    instead of a debug list per host.
  - Hosts that failed a task are listed under the table, in red, with the first line of what failed.
  - Enabled in the collection's C(ansible.cfg) (C(callbacks_enabled = sparkfleet.gb10.fleet_table)); prints nothing
    when no host set the fact.
requirements:
  - enable in ansible.cfg (callbacks_enabled)
"""

from ansible.plugins.callback import CallbackBase
from ansible.utils.color import stringc

ROW_FACT = "sparkfleet_fleet_row"
COLUMNS = ("host", "driver", "fabric", "nccl", "gpu", "ray", "model", "endpoint", "state", "gpu-mem", "tok/s", "answers",
           "bench tok/s")


def _text(value, default="-"):
    if value is None or value == "":
        return default
    return str(value)


def _rate(value):
    """tokens/s of the verify completion with one decimal; '-' for a model that did not answer one."""
    try:
        return "%.1f" % float(value)
    except (TypeError, ValueError):
        return "-"


def table_lines(rows):
    """Lines of the table for {host: row}; one line per model, host columns only on its first line."""
    lines = []
    for host in sorted(rows):
        row = rows[host] or {}
        fabric = "%s/%s" % (_text(row.get("fabric_address")), _text(row.get("fabric_mtu"), "?"))
        ray = _text(row.get("ray_role"))
        if row.get("ray_members") not in (None, ""):
            ray = "%s (%s up)" % (ray, row["ray_members"])
        head = [host, _text(row.get("driver"), "?"), fabric, _text(row.get("nccl")), _text(row.get("gpu")), ray]
        models = row.get("models") or [{}]
        for index, model in enumerate(models):
            cells = head if index == 0 else [""] * len(head)
            lines.append(cells + [_text(model.get(key)) for key in ("name", "endpoint", "state", "gpu_memory_utilization")]
                         + [_rate(model.get("tokens_per_second")), _text(model.get("correctness")),
                            _text(model.get("benchmark"))])
    widths = [max(len(c) for c in column) for column in zip(COLUMNS, *lines)] if lines else []
    out = []
    for cells in [list(COLUMNS)] + lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    if out:
        out.insert(1, "  ".join("-" * w for w in widths))
    return out


def failure_line(host, task_name, result):
    """'host: task: first line of the message' for a failed task."""
    message = result.get("msg") or result.get("stderr") or result.get("reason") or "failed"
    first = str(message).strip().splitlines()[0] if str(message).strip() else "failed"
    return "%s: %s: %s" % (host, task_name, first)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sparkfleet.gb10.fleet_table"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows = {}
        self.failures = []

    def v2_runner_on_ok(self, result):
        facts = result._result.get("ansible_facts") or {}
        if ROW_FACT in facts:
            self.rows[result._host.get_name()] = facts[ROW_FACT]

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self.failures.append(failure_line(result._host.get_name(), result._task.get_name(), result._result))

    def v2_playbook_on_stats(self, stats):
        if not self.rows and not self.failures:
            return
        self._display.banner("FLEET")
        for line in table_lines(self.rows):
            self._display.display(line)
        for line in self.failures:
            self._display.display(stringc(line, "red"), stderr=False)
