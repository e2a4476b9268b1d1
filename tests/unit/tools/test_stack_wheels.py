# -*- coding: utf-8 -*-
"""tools/stack_wheels.py: reading fatbin containers and what a compute capability 12.1 GPU runs of them (the real
wheels are judged in tests/contract/test_stack_wheels.py; here the rules of the reading itself)."""
import os
import struct
import sys

import pytest

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools")
sys.path.insert(0, TOOLS)

import stack_wheels as sw  # noqa: E402

PTX, ELF = sw.KIND_PTX, sw.KIND_ELF


@pytest.mark.parametrize("kind, arch, flags, runs", [
    (ELF, 121, 0, True),                          # its own SASS
    (ELF, 120, 0, True),                          # same major, lower minor: binary compatible
    (ELF, 120, sw.FLAG_FAMILY, True),             # sm_120f: the 12.x family
    (ELF, 120, sw.FLAG_ARCH_SPECIFIC, False),     # sm_120a: 12.0 only
    (ELF, 121, sw.FLAG_ARCH_SPECIFIC, True),      # sm_121a
    (ELF, 100, 0, False),                         # another major
    (ELF, 90, sw.FLAG_ARCH_SPECIFIC, False),
    (PTX, 80, 0, True),                           # PTX of an older target: the driver compiles it (JIT)
    (PTX, 120, 0, True),
    (PTX, 120, sw.FLAG_ARCH_SPECIFIC, False),     # compute_120a PTX: 12.0 only
    (PTX, 100, sw.FLAG_FAMILY, False),            # compute_100f: the 10.x family
])
def test_what_12_1_runs(kind, arch, flags, runs):
    assert sw.runs_on(kind, arch, flags, 121) is runs


def _entry(kind, arch, flags, payload=b"\0" * 8):
    header = bytearray(64)
    struct.pack_into("<HHIQ", header, 0, kind, 0x101, 64, len(payload))
    struct.pack_into("<I", header, 28, arch)
    struct.pack_into("<Q", header, 40, flags)
    return bytes(header) + payload


def _container(*entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", sw.FATBIN_MAGIC, 1, 16, len(body)) + body


def test_containers_and_their_entries_are_read_in_place():
    blob = b"junk" + _container(_entry(ELF, 120, sw.FLAG_FAMILY), _entry(PTX, 80, 0)) + _container(
        _entry(ELF, 90, sw.FLAG_ARCH_SPECIFIC)) + b"tail"
    assert sw.fatbin_containers(blob) == [[(ELF, 120, sw.FLAG_FAMILY), (PTX, 80, 0)],
                                          [(ELF, 90, sw.FLAG_ARCH_SPECIFIC)]]
    assert [sw.arch_name(*e) for e in sw.fatbin_containers(blob)[0]] == ["sm_120f", "compute_80"]


def test_a_container_that_is_not_a_fatbin_is_refused():
    bad = struct.pack("<IHHQ", sw.FATBIN_MAGIC, 1, 16, 10 ** 9)
    with pytest.raises(ValueError):
        sw.fatbin_containers(bad)
