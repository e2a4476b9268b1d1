# -*- coding: utf-8 -*-
"""The lock a Spark's virtualenv installs from (plugins/module_utils/venv_lock.py)."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook, venv_lock

TEXT = """# a comment
ray==2.60.0 \\
    --hash=sha256:%s
torch_c-dlpack.ext==0.1.5 \\
    --hash=sha256:%s
""" % ("a" * 64, "b" * 64)


def test_parse_reads_names_versions_and_hashes():
    assert venv_lock.parse(TEXT) == {"ray": ("2.60.0", ["a" * 64]), "torch-c-dlpack-ext": ("0.1.5", ["b" * 64])}


@pytest.mark.parametrize("line", ["ray>=2.60", "    --hash=md5:abc", "-r other.txt"])
def test_parse_refuses_what_a_hashed_requirements_file_does_not_hold(line):
    with pytest.raises(ValueError):
        venv_lock.parse(TEXT + line + "\n")


@pytest.mark.parametrize("spec, pin", [
    ("ray[default]==2.60.0", ("ray", "2.60.0")),
    ("Torch_C.dlpack == 0.1.5", ("torch-c-dlpack", "0.1.5")),
    ("torch>=2.11", None),
    ("torch==2.11.0; platform_machine == 'aarch64'", None),
])
def test_pin_of(spec, pin):
    assert venv_lock.pin_of(spec) == pin


def test_disagreements_name_the_version_the_lock_has():
    entries = venv_lock.parse(TEXT)
    assert venv_lock.disagreements(["ray[default]==2.60.0"], entries) == []
    assert venv_lock.disagreements(["ray==2.59.0", "vllm==0.23.0", "torch"], entries) == [
        "ray==2.59.0 (the lock has 2.60.0)", "vllm==0.23.0 (not in the lock)", "torch (not one pinned version)"]


def test_the_committed_lock_holds_the_rule_books_pins_with_one_hash_each():
    lock = venv_lock.load()
    pins = {"vllm": "vllm_version", "torch": "torch_version", "triton": "triton_version",
            "transformers": "transformers_version", "ray": "ray_version"}
    assert dict((name, lock[name][0]) for name in pins) == dict((n, rulebook.setting(k)) for n, k in pins.items())
    assert all(len(hashes) == 1 for _version, hashes in lock.values())
    # The CUDA 13 stack a Spark gets (rule torch_cuda_build), and no CUDA 12 NCCL beside it.
    assert lock["nvidia-nccl-cu%d" % rulebook.setting("torch_cuda_major")][0] == rulebook.setting("nccl_version")
    assert "nvidia-nccl-cu12" not in lock
