# -*- coding: utf-8 -*-
"""The summary play's read of the host's files and its row of the fleet table (playbooks/summary.yml), run by
ansible-playbook on localhost: the tasks as the playbook has them, the files where a test puts them. The one read
takes os_update's do-not-reboot record too (after the benchmark), and the row carries it as do_not_reboot."""

from __future__ import annotations

import json
import os

import yaml

from ansible_local import local_playbook

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
READ = "Read the state and gpu-memory-utilization of this host's vLLM units"
ROW = "Keep this host's row of the fleet table (the sparkfleet.gb10.fleet_table callback prints it)"
RECORD = {"next_boot": "6.17.0-1016-nvidia", "next_boot_once": True, "reason": "no NVIDIA module",
          "refused_kernel": "6.17.0-1020-nvidia", "running_kernel": "6.17.0-1016-nvidia", "step": "proof"}
BENCHMARK = {"models": [{"name": "m1", "headline": "17.0@c1 36.4@c4"}]}


def summary_tasks(*names):
    with open(os.path.join(REPO, "playbooks", "summary.yml")) as handle:
        tasks = yaml.safe_load(handle)[0]["tasks"]
    found = dict((task["name"], task) for task in tasks)
    return [found[name] for name in names]


def run_row(tmp_path, tasks, play_vars):
    out = tmp_path / "row.json"
    play = [{"name": "Summary", "hosts": "localhost", "gather_facts": False, "vars": play_vars,
             "tasks": tasks + [{"name": "Write the row", "ansible.builtin.copy": {
                 "content": "{{ sparkfleet_fleet_row | to_json }}", "dest": str(out), "mode": "0644"}}]}]
    proc = local_playbook(tmp_path, yaml.safe_dump(play, sort_keys=False))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def files_vars(tmp_path):
    return {"_summary_services": [], "_summary_page_cache_file": str(tmp_path / "drops.json"),
            "_summary_benchmark_file": str(tmp_path / "benchmark.json"),
            "_summary_reboot_hold_file": str(tmp_path / "hold" / "do-not-reboot.json")}


def test_the_row_carries_the_do_not_reboot_record_read_with_the_other_files(tmp_path):
    (tmp_path / "drops.json").write_text(json.dumps({"last": {"at": 1, "how": "local"}}))
    (tmp_path / "benchmark.json").write_text(json.dumps(BENCHMARK, indent=2) + "\n")
    (tmp_path / "hold").mkdir()
    (tmp_path / "hold" / "do-not-reboot.json").write_text(json.dumps(RECORD, indent=4, sort_keys=True) + "\n")
    row = run_row(tmp_path, summary_tasks(READ, ROW), files_vars(tmp_path))
    assert json.loads(row["do_not_reboot"]) == RECORD
    # The page-cache record before it is read as before.
    assert row["page_cache_how"] == "local" and float(row["page_cache_age_s"]) > 0


def test_without_a_record_the_row_says_none(tmp_path):
    row = run_row(tmp_path, summary_tasks(READ, ROW), files_vars(tmp_path))
    assert row["do_not_reboot"] is None and row["page_cache_how"] == ""


def test_the_benchmark_before_the_record_still_gives_each_model_its_headline(tmp_path):
    """The read's output as a host with a unit, a page-cache record, a benchmark and a do-not-reboot record
    answers it (a benchmark file without its final newline included)."""
    stdout = ("sparkfleet-vllm-m1 active 0.5\n--- page cache\n100\n" + json.dumps({"last": {"at": 40, "how": "asked"}})
              + "\n--- benchmark\n" + json.dumps(BENCHMARK) + "--- do not reboot\n" + json.dumps(RECORD, indent=4))
    play_vars = {"_summary_services": [{"name": "m1", "unit": "sparkfleet-vllm-m1", "call_address": "127.0.0.1"}]}
    tasks = [{"name": "The read", "ansible.builtin.set_fact": {"__summary_units": {"stdout": stdout}}}]
    row = run_row(tmp_path, tasks + summary_tasks(ROW), play_vars)
    assert [(m["name"], m["state"], m["gpu_memory_utilization"], m["benchmark"]) for m in row["models"]] == [
        ("m1", "active", "0.5", "17.0@c1 36.4@c4")]
    assert float(row["page_cache_age_s"]) == 60 and row["page_cache_how"] == "asked"
    assert json.loads(row["do_not_reboot"]) == RECORD
