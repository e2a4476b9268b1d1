# -*- coding: utf-8 -*-
"""The fleet_table callback, fed recorded task results through Ansible's own TaskResult."""

import json
import os

from ansible_collections.sparkfleet.gb10.plugins.callback import fleet_table

from fleet_table_run import printed  # tests/unit/fleet_table_run.py

RECORDED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fleet_table",
                                        "verify_results.json"))


def _entries(recorded):
    return [(entry["host"], entry["task"], entry["result"]) for entry in recorded]


def _play(recorded):
    return printed(ok=_entries(recorded["ok"]), failed=_entries(recorded["failed"]))


def test_table_from_recorded_results():
    with open(RECORDED) as handle:
        recorded = json.load(handle)
    lines = _play(recorded)
    assert lines[0] == "== FLEET"
    header, rule, *rows = lines[1:-2]
    assert header.split() == ["host", "driver", "fabric", "nccl", "gpu", "ray", "cache", "drop", "model", "endpoint",
                              "state", "gpu-mem", "tok/s", "answers", "bench", "tok/s"]
    assert set(rule) <= {"-", " "}
    assert rows[0].split() == ["spark-1", "580.142", "192.168.100.10/9000", "2.28.9", "cpu-form", "head", "(2", "up)",
                               "-", "tiny-tp",
                               "192.168.100.10:8000", "serving", "0.87", "31.3", "-", "-"]
    assert rows[1].split()[:6] == ["spark-2", "580.142", "192.168.100.11/9000", "2.28.9", "-", "worker"]
    assert rows[1].split()[6:] == ["-", "tiny-tp", "-", "active", "(rank", "1)", "0.87", "-", "-", "-"]
    # The second model of spark-2 sits under it without repeating the host's columns.
    assert rows[2].split() == ["embed", "192.168.100.11:8001", "down", "0.05", "-", "-", "-"]
    assert rows[2].index("embed") == rows[0].index("tiny-tp")
    assert len(rows) == 3
    # spark-2's do-not-reboot record (os_update stopped at its proof), in red under the table; none for spark-1.
    assert ("spark-2: DO NOT REBOOT (proof): the next boot's kernel 6.17.0-1020-nvidia has no NVIDIA module (modinfo -k "
            "6.17.0-1020-nvidia finds none); running 6.17.0-1016-nvidia, refused 6.17.0-1020-nvidia; next boot "
            "6.17.0-1016-nvidia (once)") in lines[-2]
    assert "\x1b[" in lines[-2] or lines[-2].startswith("spark-2")
    assert not any(line.startswith("spark-1: DO NOT REBOOT") for line in lines)
    # The failed gate, in red, with the first line only.
    assert ("spark-2: Ask every endpoint for a timed completion (tokens/s of the fleet table): "
            "http://127.0.0.1:8001/v1/completions answered -1") in lines[-1]
    assert "\x1b[" in lines[-1] or lines[-1].startswith("spark-2")
    assert "more" not in lines[-1]


def test_silent_without_rows_or_failures():
    assert _play({"ok": [{"host": "h", "task": "t", "result": {"changed": False}}], "failed": []}) == []


def test_ignored_failures_are_not_listed():
    assert printed(ignored=[("h", "t", {"msg": "x"})]) == []


def test_host_without_models_gets_dashes():
    lines = fleet_table.table_lines({"spark-3": {"driver": "580.142", "fabric_address": "10.0.0.3", "fabric_mtu": 1500}})
    assert lines[2].split() == ["spark-3", "580.142", "10.0.0.3/1500", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                                "-"]


def test_tokens_per_second_has_one_decimal_and_a_dash_when_missing():
    models = [{"name": "a", "tokens_per_second": 12.345}, {"name": "b", "tokens_per_second": "17"},
              {"name": "c", "tokens_per_second": "-"}, {"name": "d"}]
    lines = fleet_table.table_lines({"h": {"models": models}})
    assert [line.split()[-3] for line in lines[2:]] == ["12.3", "17.0", "-", "-"]


def test_the_correctness_form_and_the_benchmark_headline_have_their_columns():
    """The summary play's 'correctness' (verify's gate) and 'benchmark' (the last sweep's headline) of each model."""
    models = [{"name": "qwen3", "tokens_per_second": 17.2, "correctness": "answers 3/3", "benchmark": "17.0@c1 36.4@c4"},
              {"name": "tiny", "correctness": "same twice"}]
    lines = fleet_table.table_lines({"h": {"models": models}})
    header = lines[0]
    assert header.index("answers") < header.index("bench tok/s")
    first, second = lines[2], lines[3]
    assert first[header.index("answers"):].split()[:2] == ["answers", "3/3"]
    assert first[header.index("bench tok/s"):].strip() == "17.0@c1 36.4@c4"
    assert second[header.index("answers"):].split() == ["same", "twice", "-"]
