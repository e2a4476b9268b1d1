# -*- coding: utf-8 -*-
"""The fleet table's do-not-reboot lines: the record sparkfleet.gb10.os_update leaves on a host whose update stopped
past its upgrade (roles/os_update/tasks/stopped.yml, the fleet default reboot_hold_file), read by the summary play
(playbooks/summary.yml) into the row's do_not_reboot and printed in red under the table, through the redaction."""

import json

import pytest

from ansible_collections.sparkfleet.gb10.plugins.callback import fleet_table

from fleet_table_run import printed  # tests/unit/fleet_table_run.py

# What stopped.yml writes (to_nice_json, sort_keys) after a refused proof.
RECORD = {"next_boot": "6.17.0-1016-nvidia", "next_boot_once": True,
          "reason": "the next boot's kernel 6.17.0-1020-nvidia has no NVIDIA module",
          "refused_kernel": "6.17.0-1020-nvidia", "running_kernel": "6.17.0-1016-nvidia", "step": "proof"}
LINE = ("spark-1: DO NOT REBOOT (proof): the next boot's kernel 6.17.0-1020-nvidia has no NVIDIA module; "
        "running 6.17.0-1016-nvidia, refused 6.17.0-1020-nvidia; next boot 6.17.0-1016-nvidia (once)")


def _print(rows, failed=()):
    return printed(ok=[(host, "Keep this host's row of the fleet table", {"ansible_facts": {fleet_table.ROW_FACT: row}})
                       for host, row in rows.items()],
                   failed=[(host, "A gate", {"failed": True, "msg": message}) for host, message in failed])


@pytest.mark.parametrize("read", [json.dumps(RECORD, indent=4, sort_keys=True) + "\n", RECORD],
                         ids=["json text", "mapping"])
def test_a_host_with_a_record_gets_its_line_under_the_table(read):
    lines = _print({"spark-1": {"models": [{"name": "m"}], "do_not_reboot": read},
                    "spark-2": {"models": [{"name": "n"}], "do_not_reboot": None}, "spark-3": {"models": []}})
    # banner, header, rule, one row per host, then the line of spark-1 alone, in red.
    assert len(lines) == 7 and lines[3].startswith("spark-1") and lines[5].startswith("spark-3")
    assert lines[6] in (LINE, fleet_table.stringc(LINE, "red"))
    assert not any("spark-2: DO NOT REBOOT" in line or "spark-3: DO NOT REBOOT" in line for line in lines)


def test_the_record_lines_come_before_the_failures_and_are_sorted_by_host():
    rows = {"spark-2": {"do_not_reboot": json.dumps(dict(RECORD, step="upgrade"))},
            "spark-1": {"do_not_reboot": json.dumps(RECORD)}}
    lines = _print(rows, failed=[("spark-2", "it broke")])
    assert [line.split(":")[0].split("spark-")[-1] for line in lines[-3:]] == ["1", "2", "2"]
    assert "DO NOT REBOOT (upgrade)" in lines[-2] and "A gate: it broke" in lines[-1]


def test_an_unreadable_or_partial_record_still_says_not_to_reboot():
    assert fleet_table.hold_record(None) is None
    broken = fleet_table.hold_record("{not json")
    assert broken == {"reason": "the record cannot be read ({not json)"}
    assert fleet_table.hold_line("spark-1", broken) == (
        "spark-1: DO NOT REBOOT: the record cannot be read ({not json); running ?, refused ?")
    assert fleet_table.hold_record("cannot read /var/lib/sparkfleet-os-update/do-not-reboot.json")["reason"] == (
        "the record cannot be read (cannot read /var/lib/sparkfleet-os-update/do-not-reboot.json)")
    assert fleet_table.hold_record("")["reason"] == "the record cannot be read (empty)"
    assert fleet_table.hold_record("[1, 2]")["reason"] == "the record cannot be read ([1, 2])"
    # A record without a next boot (grub_next_boot could not set it) and a reason over several lines.
    line = fleet_table.hold_line("h", {"reason": "step failed:\n  apt said no", "step": "upgrade",
                                       "running_kernel": "a", "refused_kernel": "b", "next_boot": None})
    assert line == "h: DO NOT REBOOT (upgrade): step failed: apt said no; running a, refused b"
    assert fleet_table.hold_lines({"x": {}, "y": {"do_not_reboot": None}}) == []


def test_the_line_shows_no_secret():
    """The reason is a failed task's message: the run's secrets and the shapes of secrets are hidden, as in the
    failure lines."""
    record = dict(RECORD, reason="apt fetch https://user:pw-in-url-1@mirror/x failed; HF_TOKEN=by-shape-2; run-known-3")
    line = fleet_table.hold_line("spark-1", record, secrets={"run-known-3"})
    assert line.startswith("spark-1: DO NOT REBOOT (proof): apt fetch https://")
    assert "pw-in-url-1" not in line and "by-shape-2" not in line and "run-known-3" not in line
    lines = _print({"spark-1": {"do_not_reboot": json.dumps(dict(RECORD, reason="HF_TOKEN=hf_abcdefghijkl"))}})
    assert "hf_abcdefghijkl" not in lines[-1] and "DO NOT REBOOT" in lines[-1]
