# -*- coding: utf-8 -*-
"""The head watch of sparkfleet.gb10.vllm_service: what it makes of the head's /health (a real HTTP
server on localhost), and when it restarts the follower."""

from __future__ import annotations

import importlib.util
import os

import pytest

from fake_vllm import closed_port  # tests/unit/fake_vllm.py

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROGRAM = os.path.join(REPO, "roles", "vllm_service", "files", "sparkfleet-vllm-headwatch.py")
_spec = importlib.util.spec_from_file_location("sparkfleet_vllm_headwatch", PROGRAM)
headwatch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(headwatch)

UP, DOWN, UNKNOWN = headwatch.UP, headwatch.DOWN, headwatch.UNKNOWN


@pytest.fixture
def server(serve_vllm):
    """(handler, /health URL) of a stand-in head (tests/unit/fake_vllm.py), healthy until the test sets its
    ``health`` status."""
    handler, url = serve_vllm("head")
    return handler, url + "/health"


def test_observe_reads_a_real_server(server):
    handler, url = server
    assert headwatch.observe(url, timeout=30) == UP
    handler.health = 503  # vLLM answers 503 once its engine is dead
    assert headwatch.observe(url, timeout=30) == DOWN
    handler.health = 404
    assert headwatch.observe(url, timeout=30) == UNKNOWN
    handler.health, handler.delay = 200, 1.0
    assert headwatch.observe(url, timeout=0.2) == UNKNOWN  # slow is not gone (the answer waits 1 s at least)


def test_observe_a_refused_connection_is_down():
    assert headwatch.observe("http://127.0.0.1:%d/health" % closed_port(), timeout=30) == DOWN


def test_a_head_that_answered_then_went_away_restarts_the_follower_after_n_failures():
    watch = headwatch.Watch(failures=3, grace=600)
    assert watch.step(True, 10, UP) is None
    assert watch.step(True, 15, DOWN) is None
    assert watch.step(True, 20, DOWN) is None
    reason = watch.step(True, 25, DOWN)
    assert reason == "the head stopped answering (3 checks in a row refused or failed)"


def test_a_timeout_breaks_the_run_of_failures():
    watch = headwatch.Watch(failures=3, grace=600)
    watch.step(True, 10, UP)
    watch.step(True, 15, DOWN)
    watch.step(True, 20, DOWN)
    assert watch.step(True, 25, UNKNOWN) is None
    assert watch.step(True, 30, DOWN) is None  # counting starts again


def test_a_head_that_never_answered_waits_for_the_grace_period():
    watch = headwatch.Watch(failures=3, grace=600)
    for age in (5, 100, 300, 599):
        assert watch.step(True, age, DOWN) is None  # a head loading a large model refuses for minutes
    assert watch.step(True, 600, DOWN) == "the head has not answered within 600 s of this follower starting"


def test_a_stopped_follower_is_left_alone_and_forgets_the_head():
    watch = headwatch.Watch(failures=2, grace=600)
    watch.step(True, 10, UP)
    watch.step(True, 15, DOWN)
    assert watch.step(False, 0, UNKNOWN) is None  # a person stopped it
    assert watch.step(False, 0, UNKNOWN) is None
    assert watch.step(True, 5, DOWN) is None  # started again: the head has not been seen since
    assert watch.step(True, 10, DOWN) is None
