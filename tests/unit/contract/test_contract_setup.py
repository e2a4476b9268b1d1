# -*- coding: utf-8 -*-
"""tools/contract_setup.py: a wheel whose sha256 is not the lock's is refused, a pin the lock
does not know says how to refresh it, and the lock round-trips (no network: offline paths)."""

import hashlib
import os
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tools"))

import contract_setup  # noqa: E402

WHEEL = "vllm-9.9.9-cp38-abi3-manylinux_2_31_x86_64.whl"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    wheels = tmp_path / "upstream" / "wheels"
    wheels.mkdir(parents=True)
    monkeypatch.setattr(contract_setup, "WHEELS", str(wheels))
    monkeypatch.setattr(contract_setup, "CACHE", str(tmp_path))
    return wheels


def test_the_committed_lock_covers_the_rule_books_pins():
    lock = contract_setup.read_lock()
    for dist, version in contract_setup.pins():
        assert "%s==%s" % (dist, version) in lock, "tools/contract.lock lacks %s==%s: %s" % (
            dist, version, contract_setup.LOCK_CMD)


def test_pins_come_from_the_rule_book():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook
    assert dict(contract_setup.pins()) == {"vllm": rulebook.setting("vllm_version"),
                                           "ray": rulebook.setting("ray_version")}


def test_a_matching_wheel_is_taken(cache):
    (cache / WHEEL).write_bytes(b"release")
    lock = {"vllm==9.9.9": (WHEEL, hashlib.sha256(b"release").hexdigest())}
    assert contract_setup.fetch("vllm", "9.9.9", lock, offline=True) == str(cache / WHEEL)


def test_a_partial_or_tampered_wheel_is_refused(cache):
    (cache / WHEEL).write_bytes(b"relea")
    lock = {"vllm==9.9.9": (WHEEL, hashlib.sha256(b"release").hexdigest())}
    with pytest.raises(contract_setup.SetupError, match="partial or tampered"):
        contract_setup.fetch("vllm", "9.9.9", lock, offline=True)


def test_a_pin_the_lock_does_not_know_names_the_refresh_command(cache):
    with pytest.raises(contract_setup.SetupError, match="make contract-lock"):
        contract_setup.fetch("vllm", "9.9.9", {}, offline=True)


def test_a_missing_wheel_offline_says_make_setup(cache):
    lock = {"vllm==9.9.9": (WHEEL, "0" * 64)}
    with pytest.raises(contract_setup.SetupError, match="make setup"):
        contract_setup.fetch("vllm", "9.9.9", lock, offline=True)


def test_lock_round_trips(tmp_path):
    path = str(tmp_path / "contract.lock")
    entries = {"ray==1.0": ("ray-1.0-cp311-cp311-x.whl", "a" * 64), "vllm==2.0": (WHEEL, "b" * 64)}
    contract_setup.write_lock(entries, path)
    assert contract_setup.read_lock(path) == entries
