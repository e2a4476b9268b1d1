# -*- coding: utf-8 -*-
"""The recordings and shapes under tests/fixtures, as the unit tests read them (shared by tests/unit)."""

import json
import os

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "fixtures"))


def fixture_text(*parts):
    """The text of the file tests/fixtures/<parts...>."""
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def recorded_command(folder, name):
    """(entry, (rc, stdout, stderr)) of a command recorded in tests/fixtures/<folder>: its entry of the folder's
    index.json (with its rc), its output in <name>.out and its errors in <name>.err (none where there is no such
    file)."""
    with open(os.path.join(FIXTURES, folder, "index.json"), encoding="utf-8") as handle:
        entry = json.load(handle)[name]
    err = os.path.join(FIXTURES, folder, name + ".err")
    return entry, (entry["rc"], fixture_text(folder, name + ".out"),
                   fixture_text(folder, name + ".err") if os.path.exists(err) else "")
