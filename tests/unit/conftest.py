# -*- coding: utf-8 -*-
"""Make ``ansible_collections.sparkfleet.gb10`` importable from the checkout.

collections/ansible_collections/sparkfleet/gb10 is a symlink to the top of the
repository, so putting ``collections`` first on sys.path resolves the
collection's own code and tests see exactly what Ansible runs.
"""

import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(REPO, "collections")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "gb10")

if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
# Shared test helpers (tests/unit/ansible_local.py, tests/unit/fake_vllm.py).
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fake_vllm  # noqa: E402  (tests/unit/fake_vllm.py, importable once the line above ran)


@pytest.fixture()
def serve_vllm():
    """serve_vllm(name, **attributes) -> (handler class, base URL) of a running stand-in for `vllm serve`
    (tests/unit/fake_vllm.py), stopped after the test; the servers of a test share one log."""
    with fake_vllm.Servers() as servers:
        yield servers.start
