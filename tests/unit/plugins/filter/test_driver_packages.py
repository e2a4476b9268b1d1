# -*- coding: utf-8 -*-
"""driver_packages: what the nvidia_driver role installs, moves back to its branch, takes off DKMS and holds, from
the driver's unit and the packages gb10_facts read (the lists roles/nvidia_driver/tasks/install.yml hands apt and
dpkg)."""

from ansible_collections.sparkfleet.gb10.plugins.filter.missing_packages import driver_packages, driver_unit

USERSPACE = ["nvidia-driver-580-open", "libnvidia-compute-580", "nvidia-utils-580"]
META = "linux-modules-nvidia-580-open-nvidia-hwe-24.04"
DKMS = "nvidia-dkms-580-open"
KERNEL = ["linux-nvidia-hwe-24.04", "linux-image-nvidia-hwe-24.04", "linux-headers-nvidia-hwe-24.04"]


def test_the_unit_says_what_it_was_named_for():
    assert driver_unit(580)["branch"] == "580"
    assert driver_unit("580", kernel_module="dkms")["kernel_module"] == "dkms"
    assert driver_unit("580")["kernel_module"] == "precompiled"


def test_a_host_on_the_branch_installs_by_name_and_holds_its_installed_kernel_metapackages():
    versions = dict([(name, "580.142-0ubuntu1") for name in USERSPACE] + [(META, "6.17.0-1016.16"),
                    (KERNEL[0], "6.17.0-1016.16"), (KERNEL[1], "6.17.0-1016.16"), ("zlib1g", "1:1.3.dfsg-3.1ubuntu2")])
    plan = driver_packages(driver_unit("580"), USERSPACE, versions)
    assert plan["on_branch"] == USERSPACE
    assert plan["branch"] == USERSPACE and plan["off_branch"] == [] and plan["dkms_installed"] == []
    assert plan["install"] == USERSPACE + [META]
    # linux-headers-... is not installed: a hold on it would be a dpkg error
    assert plan["held"] == USERSPACE + [META] + KERNEL[:2]


def test_a_package_off_the_branch_is_asked_for_at_the_branch_and_the_dkms_driver_goes():
    versions = {"nvidia-driver-580-open": "590.44.01-0ubuntu1", "libnvidia-compute-580": "1:580.95.05-0ubuntu1",
                "nvidia-utils-580": "5800.1", DKMS: "580.95.05-0ubuntu1", "linux-headers-nvidia-hwe-24.04": "6.17"}
    plan = driver_packages(driver_unit("580"), USERSPACE, versions)
    # an epoch before the branch is still the branch; 5800.1 is not branch 580
    assert plan["on_branch"] == ["libnvidia-compute-580", DKMS]
    assert plan["off_branch"] == ["nvidia-driver-580-open", "nvidia-utils-580"]
    assert plan["install"] == ["nvidia-driver-580-open=580.*", "libnvidia-compute-580", "nvidia-utils-580=580.*", META]
    assert plan["dkms_installed"] == [DKMS]
    assert plan["held"] == USERSPACE + [META, KERNEL[2]]


def test_on_dkms_the_dkms_driver_is_of_the_branch_and_nothing_is_taken_off_it():
    versions = {DKMS: "590.1", META: "6.17", "nvidia-utils-580": "580.5800"}
    plan = driver_packages(driver_unit("580", kernel_module="dkms"), USERSPACE, versions)
    assert plan["branch"] == USERSPACE + [DKMS]
    assert plan["off_branch"] == [DKMS]
    assert plan["dkms_installed"] == []
    # the module metapackage is not asked for: the DKMS driver builds the module
    assert plan["install"] == USERSPACE[:2] + ["nvidia-utils-580", DKMS + "=580.*"]
    assert plan["held"] == USERSPACE + [DKMS]


def test_without_facts_every_package_is_asked_for_by_name_and_no_kernel_metapackage_is_held():
    for versions in (None, {}):
        plan = driver_packages(driver_unit("580"), USERSPACE, versions)
        assert plan["off_branch"] == [] and plan["dkms_installed"] == [] and plan["on_branch"] == []
        assert plan["install"] == USERSPACE + [META]
        assert plan["held"] == USERSPACE + [META]


def test_hold_kernel_off_holds_the_driver_and_its_module_only():
    versions = dict((name, "6.17") for name in KERNEL)
    for off in (False, "no", "false", 0):
        assert driver_packages(driver_unit("580"), USERSPACE, versions, off)["held"] == USERSPACE + [META]
    for on in (True, "yes", "true", 1):
        assert driver_packages(driver_unit("580"), USERSPACE, versions, on)["held"] == USERSPACE + [META] + KERNEL
