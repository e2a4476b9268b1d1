# -*- coding: utf-8 -*-
"""roles/vllm_service/files/sparkfleet_api_guard.py: the API key on every route of a keyed vLLM endpoint
(vLLM's own check covers /v1, /v2, /inference and /cohere only; /invocations, /tokenize and the rest answered
anyone, as the real vLLM of the simulated fleet showed). Its decision is tested here; the Molecule scenario
site and fleet_verify prove it on the running vLLM, and the contract test that vLLM's parser takes the flag."""

import importlib.util
import os

import pytest

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "vllm_service", "files",
                    "sparkfleet_api_guard.py")
SPEC = importlib.util.spec_from_file_location("sparkfleet_api_guard", PATH)
guard = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(guard)

KEYS = guard._keys({"VLLM_API_KEY": "sk-right"})


@pytest.mark.parametrize("path", ["/invocations", "/tokenize", "/detokenize", "/pooling", "/score", "/v1/models",
                                  "/load", "/server_info", "/", "/health/../invocations"])
def test_every_other_route_needs_the_key(path):
    assert not guard.allowed("POST", path, None, KEYS)
    assert not guard.allowed("POST", path, "Bearer sk-wrong", KEYS)
    assert not guard.allowed("POST", path, "Basic sk-right", KEYS)
    assert not guard.allowed("POST", path, "Bearer ", KEYS)
    assert guard.allowed("POST", path, "Bearer sk-right", KEYS)
    assert guard.allowed("POST", path, "bearer sk-right", KEYS)


@pytest.mark.parametrize("path", sorted(guard.OPEN_PATHS))
def test_health_metrics_ping_and_version_stay_open(path):
    assert guard.allowed("GET", path, None, KEYS)


def test_a_cors_preflight_passes_as_in_vllm():
    assert guard.allowed("OPTIONS", "/invocations", None, KEYS)


def test_without_a_key_in_the_environment_everything_passes():
    assert guard._keys({}) == [] and guard._keys({"VLLM_API_KEY": ""}) == []
    assert guard.allowed("POST", "/invocations", None, [])


def test_the_units_load_it_by_the_name_the_file_has():
    with open(os.path.join(os.path.dirname(PATH), "..", "tasks", "preflight.yml")) as handle:
        assert "'sparkfleet_api_guard.require_key'" in handle.read()
    assert callable(guard.require_key) and guard.require_key.__code__.co_flags & 0x80  # a coroutine function
