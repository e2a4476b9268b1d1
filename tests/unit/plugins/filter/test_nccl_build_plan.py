# -*- coding: utf-8 -*-
"""Build groups of identical hosts (plugins/module_utils/nccl_build.py, filter nccl_build_plan)."""
import copy

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_build_plan import FilterModule, nccl_build_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_build

STAMP = {
    "version": "2.28.9",
    "source": "git",
    "revision": "git:" + "a" * 40,
    "gencode": "-gencode=arch=compute_121,code=sm_121",
    "compiler": "Cuda compilation tools, release 13.0, V13.0.88 | Build cuda_13.0.r13.0/compiler.36424714_0",
    "make_args": [],
}
TESTS = {"revision": "git:" + "b" * 40, "make_args": ["MPI=0"]}


def host(address="192.168.100.10", enabled=True, tests=None, **stamp):
    return {"stamp": dict(STAMP, **stamp), "tests": TESTS if tests is None else tests, "address": address, "enabled": enabled}


def test_registered():
    assert set(FilterModule().filters()) == {"nccl_build_plan"}


def test_key_is_stable_and_short():
    key = nccl_build.group_key(STAMP, TESTS)
    assert key == nccl_build.group_key(copy.deepcopy(STAMP), dict(TESTS))
    assert len(key) == 16 and int(key, 16) >= 0


@pytest.mark.parametrize("change", [
    {"version": "2.29.3"},
    {"source": "archive"},
    {"revision": "git:" + "c" * 40},
    {"gencode": "-gencode=arch=compute_120,code=sm_120 -gencode=arch=compute_121,code=sm_121"},
    {"compiler": "Cuda compilation tools, release 13.5, V13.5.37 | Build cuda_13.5.r13.5/compiler.39125733_0"},
    {"make_args": ["DEBUG=1"]},
])
def test_every_stamp_field_changes_the_key(change):
    assert nccl_build.group_key(dict(STAMP, **change), TESTS) != nccl_build.group_key(STAMP, TESTS)


@pytest.mark.parametrize("tests", [None, {"revision": "git:" + "d" * 40, "make_args": ["MPI=0"]},
                                   {"revision": TESTS["revision"], "make_args": ["MPI=1"]}])
def test_nccl_tests_inputs_change_the_key(tests):
    assert nccl_build.group_key(STAMP, tests) != nccl_build.group_key(STAMP, TESTS)


def test_key_ignores_what_the_stamp_does_not_record():
    assert nccl_build.group_key(dict(STAMP, built_on="spark-2"), TESTS) == nccl_build.group_key(STAMP, TESTS)


@pytest.mark.parametrize("fleet,expected", [
    # four identical Sparks: the first builds, the other three receive from it
    ({"s1": host("10.0.0.1"), "s2": host("10.0.0.2"), "s3": host("10.0.0.3"), "s4": host("10.0.0.4")},
     {"s1": ("build", "s1", "10.0.0.1"), "s2": ("receive", "s1", "10.0.0.1"), "s3": ("receive", "s1", "10.0.0.1"),
      "s4": ("receive", "s1", "10.0.0.1")}),
    # nccl_build_once false on every host: everyone builds, as before
    ({"s1": host("10.0.0.1", enabled=False), "s2": host("10.0.0.2", enabled=False)},
     {"s1": ("solo", "s1", None), "s2": ("solo", "s2", None)}),
    # turned off on one host: that one builds itself, the other has no identical partner left
    ({"s1": host("10.0.0.1", enabled=False), "s2": host("10.0.0.2")},
     {"s1": ("solo", "s1", None), "s2": ("solo", "s2", None)}),
    # no fabric address: it cannot receive or serve, so it builds itself; the others still share
    ({"s1": host(""), "s2": host("10.0.0.2"), "s3": host("10.0.0.3")},
     {"s1": ("solo", "s1", None), "s2": ("build", "s2", "10.0.0.2"), "s3": ("receive", "s2", "10.0.0.2")}),
    # two groups (another compiler on s2, s4): one builder each, in play order
    ({"s1": host("10.0.0.1"), "s2": host("10.0.0.2", compiler="release 13.5"), "s3": host("10.0.0.3"),
      "s4": host("10.0.0.4", compiler="release 13.5")},
     {"s1": ("build", "s1", "10.0.0.1"), "s2": ("build", "s2", "10.0.0.2"), "s3": ("receive", "s1", "10.0.0.1"),
      "s4": ("receive", "s2", "10.0.0.2")}),
    # a host without input (not in this run) takes no part
    ({"s1": None, "s2": host("10.0.0.2"), "s3": host("10.0.0.3")},
     {"s2": ("build", "s2", "10.0.0.2"), "s3": ("receive", "s2", "10.0.0.2")}),
    # one host alone
    ({"s1": host("10.0.0.1")}, {"s1": ("solo", "s1", None)}),
])
def test_plan(fleet, expected):
    got = nccl_build_plan(fleet)
    assert dict((h, (p["role"], p["builder"], p["builder_address"])) for h, p in got.items()) == expected
    for h, p in got.items():
        if p["role"] == "build":
            assert p["receivers"] == [r for r, q in got.items() if q["role"] == "receive" and q["builder"] == h]
        else:
            assert p["receivers"] == []
        assert p["key"] == nccl_build.group_key(fleet[h]["stamp"], fleet[h]["tests"])


@pytest.mark.parametrize("fleet,word", [
    ("s1", "must be"),
    ({"s1": "x"}, "s1: expected"),
    ({"s1": {"stamp": None, "tests": None}}, "s1: the build stamp must be a mapping"),
    ({"s1": {"stamp": {"version": "2.28.9"}, "tests": None}}, "s1: the build stamp lacks source, revision"),
    ({"s1": host(revision="")}, "s1: the build stamp has an empty revision"),
    ({"s1": host(compiler="  ")}, "empty compiler"),
    ({"s1": host(make_args="DEBUG=1")}, "make_args must be a list"),
    ({"s1": host(tests={"revision": "git:x"})}, "s1: the nccl-tests input lacks make_args"),
])
def test_bad_input(fleet, word):
    with pytest.raises(AnsibleFilterError, match=word):
        nccl_build_plan(fleet)
