# -*- coding: utf-8 -*-
"""The platform contract: the virtualenv's pinned set, resolved by pip's own resolver for a Spark
(linux aarch64, CPython 3.12) against PyPI by tools/platform_resolve.py (make upstream).

What it proves, from PyPI's own files: every pin has an aarch64 wheel; PyPI's torch at the
release vLLM requires is a CPU build on aarch64 (so a plain pin would give every Spark a CPU
torch); the role pins torch by its CUDA local version, which PyPI alone cannot satisfy, so pip
fails, naming it, instead of falling back. Nothing is skipped: without the reports the tests
fail and say make upstream.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tools"))
sys.path.insert(0, HERE)

# Puts the collection on the path, as for the other contract tests.
import collect  # noqa: E402,F401  pylint: disable=unused-import

import platform_resolve  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_gate, rulebook  # noqa: E402

SPECS = platform_resolve.pinned_set()
WHERE = platform_resolve.report_dir(SPECS)


def _load(name):
    path = os.path.join(WHERE, name)
    if not os.path.exists(path):
        pytest.fail("%s is missing: run make upstream (tools/platform_resolve.py resolves against PyPI)" % path)
    with open(path) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def release():
    report = _load("pypi-release.json")
    assert not report.get("failed"), "a pin has no wheel for linux aarch64 / CPython 3.12:\n%s" % report.get("output")
    return dict((item["metadata"]["name"].lower(), item) for item in report["install"])


def test_resolved_for_the_sparks_platform():
    report = _load("pypi-release.json")
    assert report["environment"]["platform_machine"] == "aarch64"
    assert report["environment"]["python_version"] == rulebook.setting("python_version")


def test_every_pin_has_an_aarch64_wheel(release):
    for spec in platform_resolve.pypi_release(SPECS):
        name, version = re.match(r"([a-z_-]+)(?:\[[a-z]+\])?==(.+)", spec).groups()
        item = release[name]
        assert item["metadata"]["version"] == version
        assert re.search(r"(aarch64|none-any)\.whl$", item["download_info"]["url"]), item["download_info"]["url"]
    wheels = [item["download_info"]["url"].rsplit("/", 1)[1] for item in release.values()]
    foreign = [w for w in wheels if re.search(r"(x86_64|amd64|win|macosx)", w)]
    assert not foreign, foreign


def test_vllm_requires_the_rule_books_torch(release):
    requires = release["vllm"]["metadata"]["requires_dist"]
    assert "torch==%s" % rulebook.setting("torch_version") in requires


def test_pypi_torch_on_aarch64_is_a_cpu_build(release):
    """Why rule torch_cuda_build exists: every CUDA requirement of PyPI's torch is for x86_64 only."""
    torch = release["torch"]
    cuda = [r for r in torch["metadata"]["requires_dist"] if r.startswith(("nvidia-", "triton"))]
    assert cuda, torch["metadata"]["requires_dist"]
    assert all('platform_machine == "x86_64"' in r for r in cuda), cuda
    assert not [name for name in release if name.startswith(("nvidia-nccl", "nvidia-cuda-runtime"))]


def test_pypi_alone_refuses_the_cuda_pin():
    result = _load("cuda-pin.json")
    torch = [s for s in result["specs"] if s.startswith("torch==")]
    assert torch == ["torch==%s+%s" % (rulebook.setting("torch_version"), rulebook.setting("torch_cuda_build"))]
    assert result["rc"] != 0
    assert "No matching distribution found for %s" % torch[0] in result["output"]


def test_the_role_installs_torch_by_its_cuda_local_version():
    """vllm_venv's default package list is the set resolved here, torch with its CUDA local version."""
    with open(os.path.join(TOP, "roles", "vllm_venv", "defaults", "main.yml")) as handle:
        defaults = handle.read()
    packages = re.search(r"^vllm_venv_packages:\n((?:  - .*\n)+)", defaults, re.M).group(1)
    names = [re.match(r'  - "([a-z\[\]]+)==', line).group(1) for line in packages.splitlines()]
    assert sorted(names) == sorted(re.match(r"([a-z\[\]]+)==", s).group(1) for s in SPECS)
    assert '"torch=={{ vllm_venv_torch_version }}"' in packages
    assert ("{{ lookup('sparkfleet.gb10.rulebook', 'torch_version') }}+{{ lookup('sparkfleet.gb10.rulebook', "
            "'torch_cuda_build') }}") in defaults
    assert gpu_gate.torch_pin_problem(SPECS, "cuda") is None
    assert gpu_gate.torch_pin_problem(platform_resolve.pypi_release(SPECS), "cuda")
