# -*- coding: utf-8 -*-
import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.missing_packages import driver_unit, missing_packages, package_name

FACTS = {"gb10": {"packages": {"rsync": "3.2.7-1", "nftables": "1.0.9-1", "python3.12-venv": "3.12.3-1",
                               "nvidia-driver-580-open": "580.142-0ubuntu1"}}}


@pytest.mark.parametrize("names, expected", [
    (["rsync", "nftables"], []),
    (["rsync", "git", "build-essential"], ["git", "build-essential"]),
    (["python3.12-venv", "python3.12-dev"], ["python3.12-dev"]),
    # exact versions: 3.2.7-1 is installed, 3.2.7 and 3.2.7-10 are not
    (["rsync=3.2.7-1"], []),
    (["rsync=3.2.7", "rsync=3.2.7-10"], ["rsync=3.2.7", "rsync=3.2.7-10"]),
    (["nvidia-driver-580-open=580.142*"], []),
    (["nvidia-driver-580-open=580.126*"], ["nvidia-driver-580-open=580.126*"]),
    # what the facts cannot settle goes to apt: another architecture, a comparison, a glob
    (["rsync:armhf", "rsync>=3.0", "rsync*"], ["rsync:armhf", "rsync>=3.0", "rsync*"]),
    (["nvidia-driver-590-open"], ["nvidia-driver-590-open"]),
    ("rsync", []),
    ([], []),
])
def test_against_the_facts(names, expected):
    assert missing_packages(names, FACTS) == expected


@pytest.mark.parametrize("facts", [None, {}, {"gb10": {}}, {"gb10": {"packages": None}}])
def test_without_the_facts_everything_is_missing(facts):
    # A role used alone, or a host without dpkg-query: apt decides, as without the filter.
    assert missing_packages(["rsync", "git"], facts) == ["rsync", "git"]


@pytest.mark.parametrize("names", [{"rsync": 1}, 7, None])
def test_refuses_what_is_not_a_list_of_names(names):
    with pytest.raises(AnsibleFilterError):
        missing_packages(names, FACTS)


@pytest.mark.parametrize("entry, name", [
    ("rsync", "rsync"),
    ("rsync=3.2.7-1", "rsync"),
    ("nvidia-driver-580-open=580.142*", "nvidia-driver-580-open"),
    ("nvidia-utils-580:arm64", "nvidia-utils-580"),
    ("rsync>=3.0", "rsync"),
    ("python3.12-venv", "python3.12-venv"),
    ("libstdc++6=14.2*", "libstdc++6"),
    (["rsync=3.2.7-1", "nftables:arm64"], ["rsync", "nftables"]),
    ([], []),
])
def test_package_name_of_an_apt_entry(entry, name):
    assert package_name(entry) == name


@pytest.mark.parametrize("entry", ["", "=1.0", "Rsync", "rsync*", "rsync 3.0"])
def test_package_name_refuses_what_is_not_an_entry(entry):
    with pytest.raises(AnsibleFilterError, match="not an apt package entry"):
        package_name(entry)


def test_both_filters_agree_on_the_package_of_an_entry():
    # an entry the facts settle is missing exactly when its package (package_name) is not installed
    installed = FACTS["gb10"]["packages"]
    for entry in ["rsync", "rsync=3.2.7-1", "git", "nvidia-driver-580-open=580.142*"]:
        assert (package_name(entry) in installed) == (entry not in missing_packages([entry], FACTS))


def test_driver_unit_names_what_dgx_os_moves_as_one():
    """The user space, the module of the chosen mechanism and the kernel's metapackages, named as DGX OS names them
    (tests/fixtures/apt_simulation/dgxos: every name below appears in the recorded kernel and driver move)."""
    unit = driver_unit("580")
    assert unit["userspace"] == ["nvidia-driver-580-open", "libnvidia-compute-580", "nvidia-utils-580"]
    assert unit["module"] == ["linux-modules-nvidia-580-open-nvidia-hwe-24.04"]
    assert unit["kernel"] == ["linux-nvidia-hwe-24.04", "linux-image-nvidia-hwe-24.04", "linux-headers-nvidia-hwe-24.04"]
    assert unit["held"] == unit["userspace"] + unit["module"] + unit["kernel"]
    assert driver_unit(580, kernel_module="dkms")["module"] == ["nvidia-dkms-580-open"]
    assert unit["any_module"] == ["linux-modules-nvidia-580-open-nvidia-hwe-24.04", "nvidia-dkms-580-open"]
    assert driver_unit("580", "generic-hwe-24.04")["kernel"][0] == "linux-generic-hwe-24.04"
    recorded = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "apt_simulation", "dgxos",
                                 "kernel-driver-move.txt")).read()
    for name in unit["held"]:
        assert re.search(r"(?m)^Inst %s \[" % re.escape(name), recorded), name
    with pytest.raises(AnsibleFilterError, match="precompiled, dkms"):
        driver_unit("580", kernel_module="source")
