# -*- coding: utf-8 -*-
"""systemd_exposure on real systemd-analyze security output (tests/fixtures/systemd, each file's first line says how it was made)."""

import functools

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.systemd_exposure import FilterModule, systemd_exposure
from ansible_collections.sparkfleet.gb10.plugins.module_utils import unit_security

from fixture_files import fixture_text  # tests/unit/fixture_files.py

recording = functools.partial(fixture_text, "systemd")  # the text of tests/fixtures/systemd/<name>


def test_registered():
    assert set(FilterModule().filters()) == {"systemd_exposure"}


def test_hardened_vllm_unit_passes():
    result = systemd_exposure(recording("security-vllm-hardened.txt"), kind="vllm")
    assert result == {"unit": "sparkfleet-vllm-gpt-oss-120b.service", "exposure": 2.2, "rating": "OK",
                      "threshold": 5.0, "ok": True}


def test_unhardened_ray_unit_fails():
    result = systemd_exposure(recording("security-ray-head-unhardened.txt"), kind="ray")
    assert result["unit"] == "sparkfleet-ray-head.service"
    assert result["exposure"] == 9.0 and result["rating"] == "UNSAFE"
    assert result["threshold"] == 6.0 and result["ok"] is False


def test_without_kind_no_verdict():
    assert systemd_exposure(recording("security-ray-head-unhardened.txt")) == {
        "unit": "sparkfleet-ray-head.service", "exposure": 9.0, "rating": "UNSAFE"}


def test_thresholds_are_the_policy():
    assert unit_security.threshold("vllm") == 5.0 and unit_security.threshold("ray") == 6.0
    assert unit_security.analyze_threshold("vllm") == 50 and unit_security.analyze_threshold("ray") == 60


@pytest.mark.parametrize("text, match", [
    ("", "found 0"),
    ("Unit sparkfleet-vllm-x.service not found.\n", "found 0"),
    (recording("security-vllm-hardened.txt") + recording("security-ray-head-unhardened.txt"), "found 2"),
    (None, "got NoneType"),
])
def test_refuses_other_text(text, match):
    with pytest.raises(AnsibleFilterError, match=match):
        systemd_exposure(text)


def test_unknown_kind():
    with pytest.raises(AnsibleFilterError, match="known kinds: ray, rsyncd, vllm"):
        systemd_exposure(recording("security-vllm-hardened.txt"), kind="nginx")
