# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The lock a Spark's virtualenv installs from: the whole linux aarch64 / CPython 3.12 set, with hashes.

``roles/vllm_venv/files/requirements-linux-aarch64-cp312.lock`` is pip's resolution of the rule book's pins
against PyPI (tools/platform_resolve.py --lock, `make spark-lock`), one sha256 per wheel. The vllm_venv role installs
it with ``--require-hashes`` on a CUDA host (rule torch_cuda_build); this module reads it for the checks that
a host's own pins agree with it. Pure Python, controller side (the setting checks, preflight, tests).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

LOCK_NAME = "requirements-linux-aarch64-cp312.lock"
# plugins/module_utils -> the collection's root -> the role's files.
LOCK_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "roles", "vllm_venv", "files", LOCK_NAME)

_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*\\?\s*$")
_HASH = re.compile(r"^\s+--hash=sha256:([0-9a-f]{64})\s*\\?\s*$")


def normalize(name):
    """PEP 503: 'Torch_C-dlpack.ext' -> 'torch-c-dlpack-ext'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(text):
    """{normalized name: (version, [sha256, ...])} of a lock's text."""
    entries, current = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _ENTRY.match(line)
        if found:
            current = normalize(found.group(1))
            entries[current] = (found.group(2), [])
            continue
        digest = _HASH.match(line)
        if digest and current:
            entries[current][1].append(digest.group(1))
            continue
        raise ValueError("not a line of a hashed requirements file: %r" % line)
    return entries


def load(path=LOCK_PATH):
    with open(path) as handle:
        return parse(handle.read())


def pin_of(spec):
    """('ray', '2.60.0') of 'ray[default]==2.60.0'; None for a spec that does not pin one version."""
    found = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;,]+)\s*$", str(spec))
    return (normalize(found.group(1)), found.group(2)) if found else None


def disagreements(specs, entries):
    """The specs the lock does not hold at the same version: ['torch==2.10.0 (the lock has 2.11.0)', ...]."""
    found = []
    for spec in specs:
        pin = pin_of(spec)
        if pin is None:
            found.append("%s (not one pinned version)" % spec)
        elif pin[0] not in entries:
            found.append("%s (not in the lock)" % spec)
        elif entries[pin[0]][0] != pin[1]:
            found.append("%s (the lock has %s)" % (spec, entries[pin[0]][0]))
    return found
