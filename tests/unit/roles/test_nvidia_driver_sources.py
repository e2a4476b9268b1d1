# -*- coding: utf-8 -*-
"""sparkfleet.gb10.nvidia_driver keeps a source of the host that already serves its repository (DGX OS's
cuda-compute-repo.sources): the program of roles/nvidia_driver/vars/main.yml (_nvidia_driver_sources_argv), run on
apt source trees shaped like DGX OS's, one-line and deb822. The molecule driver scenario runs it under the role."""

import os
import subprocess

import pytest
import yaml

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "nvidia_driver")
CUDA = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/"
SHIPPED = ("Types: deb\nURIs: %s\nSuites: /\nSigned-By: /usr/share/keyrings/cuda-archive-keyring.gpg\n" % CUDA)


def _others(root, uris, own="nvidia-cuda.sources"):
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        argv = yaml.safe_load(handle)["_nvidia_driver_sources_argv"]
    assert argv[:2] == ["python3", "-c"] and len(argv) == 3
    # tasks/repository.yml gives it the role's own source first, then the URIs
    with open(os.path.join(ROLE, "tasks", "repository.yml")) as handle:
        assert "_nvidia_driver_sources_argv + [_nvidia_driver_repository_file] + nvidia_driver_repository_uris" in handle.read()
    program = argv[2].replace("/etc/apt", str(root))
    own_path = os.path.join(str(root), "sources.list.d", own)
    out = subprocess.run(["python3", "-c", program, own_path] + uris, capture_output=True, text=True, check=True)
    return [os.path.relpath(p, str(root)) for p in out.stdout.split()]


@pytest.fixture
def apt(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("# deb %s /\n" % CUDA)  # commented out: not a source
    (tmp_path / "sources.list.d" / "ubuntu.sources").write_text(
        "Types: deb\nURIs: http://ports.ubuntu.com/ubuntu-ports\nSuites: noble noble-updates\nComponents: main\n")
    return tmp_path


def test_the_shipped_deb822_source_is_found_whatever_the_scheme_and_slash(apt):
    (apt / "sources.list.d" / "cuda-compute-repo.sources").write_text(SHIPPED)
    assert _others(apt, [CUDA]) == ["sources.list.d/cuda-compute-repo.sources"]
    assert _others(apt, [CUDA.replace("https", "http").rstrip("/")]) == ["sources.list.d/cuda-compute-repo.sources"]


def test_a_one_line_source_with_options_is_found(apt):
    (apt / "sources.list.d" / "cuda.list").write_text("deb [arch=arm64 signed-by=/k.gpg] %s /\n" % CUDA)
    assert _others(apt, [CUDA]) == ["sources.list.d/cuda.list"]


def test_the_roles_own_source_and_other_repositories_are_not(apt):
    (apt / "sources.list.d" / "nvidia-cuda.sources").write_text("Types: deb\nURIs: %s\nSuites: /\n" % CUDA)
    assert _others(apt, [CUDA]) == []
    assert _others(apt, ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/sbsa/"]) == []
