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
    the simulated fleet's CPU build was checked without CUDA), Ray role and members, when the host last dropped its page
    cache before a model loaded and how it was asked for (C(12s ago (asked)) when the head of a multi-node model it
    follows asked, C(local) when a vLLM unit of its own started), each model with its endpoint, state and
    gpu-memory-utilization, the tokens/s of the verify completion, which correctness check its answers passed
    (C(answers 3/3) for the rule book's known answers, C(same twice) for the determinism check alone) and the
    headline of the last benchmark sweep (output tok/s at the lowest concurrency and at the best, e.g.
    C(17.0@c1 36.4@c4))) and prints one table after the play recap,
    instead of a debug list per host.
  - Each row may carry C(do_not_reboot), the record C(sparkfleet.gb10.os_update) leaves on a host whose update stopped
    past its upgrade (the fleet default C(reboot_hold_file)) as the summary play read it - its JSON text (keys C(reason),
    C(step), C(running_kernel), C(refused_kernel), C(next_boot), C(next_boot_once)) or that mapping; null or absent for a
    host without one.
  - Each host with such a record gets one line under the table, in red, that says DO NOT REBOOT with the step, the reason,
    the running and the refused kernel and the next boot; a record that cannot be read still gets its line.
  - Hosts that failed a task are listed under the table, in red, with the first line of what failed.
  - Every line is printed through the collection's redaction (the run's secrets and the shapes of secrets hidden).
  - Enabled in the collection's C(ansible.cfg) (C(callbacks_enabled = sparkfleet.gb10.fleet_table)); prints nothing
    when no host set the fact.
requirements:
  - enable in ansible.cfg (callbacks_enabled)
"""

import json
from collections.abc import Mapping

from ansible.plugins.callback import CallbackBase
from ansible.utils.color import stringc

from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction

ROW_FACT = "sparkfleet_fleet_row"
COLUMNS = ("host", "driver", "fabric", "nccl", "gpu", "ray", "cache drop", "model", "endpoint", "state", "gpu-mem", "tok/s",
           "answers", "bench tok/s")


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


def _ago(seconds, how=None):
    """How long ago the host last dropped its page cache before a load ('-' when it never recorded one), and how
    it was asked for: '12s ago (asked)', '5m ago (local)', '3h ago', '2d ago'."""
    try:
        seconds = max(0.0, float(seconds))
    except (TypeError, ValueError):
        return "-"
    for unit, size, limit in (("s", 1, 120), ("m", 60, 7200), ("h", 3600, 172800), ("d", 86400, None)):
        if limit is None or seconds < limit:
            text = "%d%s ago" % (seconds // size, unit)
            break
    return "%s (%s)" % (text, how) if how else text


def table_lines(rows):
    """Lines of the table for {host: row}; one line per model, host columns only on its first line."""
    lines = []
    for host in sorted(rows):
        row = rows[host] or {}
        fabric = "%s/%s" % (_text(row.get("fabric_address")), _text(row.get("fabric_mtu"), "?"))
        ray = _text(row.get("ray_role"))
        if row.get("ray_members") not in (None, ""):
            ray = "%s (%s up)" % (ray, row["ray_members"])
        head = [host, _text(row.get("driver"), "?"), fabric, _text(row.get("nccl")), _text(row.get("gpu")), ray,
                _ago(row.get("page_cache_age_s"), row.get("page_cache_how"))]
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


def failure_line(host, task_name, result, secrets=()):
    """'host: task: first line of the message' for a failed task, with the run's ``secrets`` and every secret its
    shapes show hidden (plugins/module_utils/redaction.py)."""
    message = result.get("msg") or result.get("stderr") or result.get("reason") or "failed"
    first = str(message).strip().splitlines()[0] if str(message).strip() else "failed"
    return redaction.redact_text("%s: %s: %s" % (host, task_name, first), secrets)


def hold_record(value):
    """The do-not-reboot record of a row's ``do_not_reboot`` (os_update's ``reboot_hold_file`` as the summary play read
    it: its JSON text, or the mapping): None for a host without one. A record that cannot be read is still one (as
    fleet_health's probe counts it): its ``reason`` says so, with the first line of what was read."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    text = str(value).strip()
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return {"reason": "the record cannot be read (%s)" % (text.splitlines()[0] if text else "empty")}
    return record


def hold_line(host, record, secrets=()):
    """'host: DO NOT REBOOT (step): reason; running K, refused K; next boot K (once)' for a host's do-not-reboot
    record, with the run's ``secrets`` and every secret its shapes show hidden (the reason is a failure's message)."""
    step = record.get("step")
    reason = " ".join(str(record.get("reason") or "no reason recorded").split())
    line = "%s: DO NOT REBOOT%s: %s; running %s, refused %s" % (
        host, " (%s)" % step if step else "", reason, _text(record.get("running_kernel"), "?"),
        _text(record.get("refused_kernel"), "?"))
    if record.get("next_boot"):
        line += "; next boot %s%s" % (record["next_boot"], " (once)" if record.get("next_boot_once") else "")
    return redaction.redact_text(line, secrets)


def hold_lines(rows, secrets=()):
    """The do-not-reboot line of each host of ``rows`` ({host: row}) whose row carries a record, by host."""
    lines = []
    for host in sorted(rows):
        record = hold_record((rows[host] or {}).get("do_not_reboot"))
        if record is not None:
            lines.append(hold_line(host, record, secrets))
    return lines


def run_secrets(play):
    """The secret values of the inventory a play runs on (``redaction.secret_values`` of every host's variables, as
    the variable manager holds them; a template stays its text). Empty when they cannot be read: the line is then
    redacted by the shapes of secrets alone."""
    found = set()
    try:
        manager = play.get_variable_manager()
        for host in manager._inventory.get_hosts():
            found |= redaction.secret_values(manager.get_vars(play=play, host=host, include_hostvars=False))
    except Exception:  # pylint: disable=broad-except
        pass
    return found


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sparkfleet.gb10.fleet_table"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows = {}
        self.failures = []
        self.play = None

    def v2_playbook_on_play_start(self, play):
        self.play = play

    def v2_runner_on_ok(self, result):
        facts = result._result.get("ansible_facts") or {}
        if ROW_FACT in facts:
            self.rows[result._host.get_name()] = facts[ROW_FACT]

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self.failures.append((result._host.get_name(), result._task.get_name(), result._result))

    def v2_playbook_on_stats(self, stats):
        if not self.rows and not self.failures:
            return
        self._display.banner("FLEET")
        secrets = run_secrets(self.play) if self.play is not None else set()
        for line in table_lines(self.rows):
            self._display.display(redaction.redact_text(line, secrets))
        for line in hold_lines(self.rows, secrets):
            self._display.display(stringc(line, "red"), stderr=False)
        for failure in self.failures:
            self._display.display(stringc(failure_line(*failure, secrets=secrets), "red"), stderr=False)
