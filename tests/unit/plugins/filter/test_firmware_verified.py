# -*- coding: utf-8 -*-
"""firmware_verified, on fwupdmgr's real answers (tests/fixtures/fwupd): the firmware phase of os_update passes only
when each device runs, after the reboot, the release installed before it."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.firmware_verified import firmware_verified
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fwupd

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fwupd")


def answer(name):
    """host_read's answer of one recorded command."""
    with open(os.path.join(FIXTURES, "index.json")) as handle:
        entry = json.load(handle)[name]
    texts = {}
    for ext in ("out", "err"):
        with open(os.path.join(FIXTURES, "%s.%s" % (name, ext)), encoding="utf-8") as handle:
            texts[ext] = handle.read().rstrip("\r\n")
    return {"rc": entry["rc"], "stdout": texts["out"], "stderr": texts["err"], "argv": entry["argv"]}


def installed():
    offer = answer("get-updates-offer")
    return fwupd.parse_updates(offer["rc"], offer["stdout"], offer["stderr"])


def test_the_installed_release_running_after_the_reboot_is_verified():
    found = firmware_verified({"devices": answer("get-devices-updated"), "history": answer("get-history")}, installed())
    assert found["ok"] is True and found["problems"] == []
    assert found["line"] == "Integrated Webcam\u2122 1.2.4"


def test_the_old_release_running_after_the_reboot_is_named_with_fwupds_record():
    found = firmware_verified({"devices": answer("get-devices-restarted"), "history": answer("get-history-restarted")},
                              installed())
    assert found["ok"] is False and found["line"] == ""
    assert found["problems"] == [
        "firmware of Integrated Webcam\u2122 runs 1.2.2 after its reboot, not the 1.2.4 installed before it; fwupd "
        "recorded success. The device kept or went back to its old firmware: see fwupdmgr get-history and the "
        "vendor's notes before trying again (os_update_firmware); the kernel update of this host is done"]


def test_fwupd_that_cannot_answer_is_not_verified():
    found = firmware_verified({"devices": answer("refresh-offline"), "history": answer("get-history")}, installed())
    assert found["ok"] is False and "fwupdmgr exited 101" in found["problems"][0]


def test_nothing_installed_is_verified():
    found = firmware_verified({"devices": answer("get-devices-restarted"), "history": answer("get-history")}, [])
    assert found["ok"] is True and found["devices"] == []


@pytest.mark.parametrize("commands", [None, {"devices": answer("get-devices-updated")}])
def test_a_missing_answer_is_an_error(commands):
    with pytest.raises(AnsibleFilterError):
        firmware_verified(commands, installed())
