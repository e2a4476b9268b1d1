# -*- coding: utf-8 -*-
"""The platform contract: the virtualenv's pinned set, resolved by pip's own resolver for a Spark
(linux aarch64, CPython 3.12) against PyPI by tools/platform_resolve.py (make upstream), and the lock the
vllm_venv role installs from.

What it proves, from PyPI's own files: every pin has an aarch64 wheel; PyPI's torch at the release vLLM
requires is the CUDA 13 build on aarch64 (its CUDA requirements apply there), so no extra index and no
local-version pin is needed; the committed lock (roles/vllm_venv/files) is exactly that resolution, hash for
hash. Nothing is skipped: without the report the tests fail and say make upstream.
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
from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_gate, rulebook, venv_lock  # noqa: E402

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
    for spec in SPECS:
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


def test_pypi_torch_on_aarch64_is_the_cuda_13_build(release):
    """Why rule torch_cuda_build takes torch from PyPI: on aarch64 its CUDA requirements apply (none is marked
    x86_64 only) and are CUDA 13 packages, the CUDA major of DGX OS; the resolution brings NCCL for CUDA 13."""
    torch = release["torch"]
    cuda = [r for r in torch["metadata"]["requires_dist"] if r.startswith(("nvidia-", "cuda-toolkit", "triton"))]
    assert cuda, torch["metadata"]["requires_dist"]
    assert not [r for r in cuda if 'platform_machine == "x86_64"' in r], cuda
    major = rulebook.setting("torch_cuda_major")
    assert [r for r in cuda if re.match(r"cuda-toolkit\[[^\]]*cudart[^\]]*\]==%d\." % major, r)], cuda
    assert release["nvidia-nccl-cu%d" % major]["metadata"]["version"] == rulebook.setting("nccl_version")
    assert not [name for name in release if re.search(r"-cu12$", name) and name.startswith("nvidia-nccl")]


def test_the_role_installs_the_resolved_set_from_pypi():
    """vllm_venv's default package list is the set resolved here: torch at its PyPI version, no local version."""
    with open(os.path.join(TOP, "roles", "vllm_venv", "defaults", "main.yml")) as handle:
        defaults = handle.read()
    packages = re.search(r"^vllm_venv_packages:\n((?:  - .*\n)+)", defaults, re.M).group(1)
    names = [re.match(r'  - "([a-z\[\]]+)==', line).group(1) for line in packages.splitlines()]
    assert sorted(names) == sorted(re.match(r"([a-z\[\]]+)==", s).group(1) for s in SPECS)
    assert '"torch=={{ vllm_venv_torch_version }}"' in packages
    assert "vllm_venv_torch_version: \"{{ lookup('sparkfleet.gb10.rulebook', 'torch_version') }}\"" in defaults
    assert "index" not in re.search(r"^vllm_venv_torch_version:.*$", defaults, re.M).group(0)
    assert gpu_gate.torch_pin_problem(SPECS, "cuda") is None
    assert gpu_gate.torch_pin_problem(["torch==%s+cu129" % rulebook.setting("torch_version")], "cuda")


def test_the_committed_lock_is_the_resolution(release):
    """roles/vllm_venv/files' lock holds every wheel of the resolution, with PyPI's sha256, and nothing else: a pin
    moved in the rule book without make spark-lock fails here."""
    lock = venv_lock.load()
    resolved = dict((venv_lock.normalize(item["metadata"]["name"]),
                     (item["metadata"]["version"], [item["download_info"]["archive_info"]["hashes"]["sha256"]]))
                    for item in release.values())
    assert lock == resolved, sorted(set((k, v[0], tuple(v[1])) for k, v in lock.items())
                                    ^ set((k, v[0], tuple(v[1])) for k, v in resolved.items()))
    with open(venv_lock.LOCK_PATH) as handle:
        assert "# pip's resolution of: %s\n" % " ".join(SPECS) in handle.read()
    assert venv_lock.disagreements(SPECS, lock) == []
