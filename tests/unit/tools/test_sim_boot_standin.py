# -*- coding: utf-8 -*-
"""The simulation's boot stand-in (tests/sim/standins/sparkfleet-sim-boot-kernel) chooses the kernel as GRUB does
with the menu the tree's update-grub stand-in writes: next_entry once, else GRUB_DEFAULT (0, or saved with
os_update_boot_once); a kernel marked as panicking falls back to GRUB's default when its command line has panic=N.
Run on a copy of the recorded GB10 tree with the real grub-editenv (package grub-common, make setup)."""

from __future__ import annotations

import os
import shutil
import subprocess

from ansible_collections.sparkfleet.gb10.plugins.module_utils import grub_boot

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
STANDIN = os.path.join(REPO, "tests", "sim", "standins", "sparkfleet-sim-boot-kernel")
OLD, NEW = "6.17.0-1014-nvidia", "6.17.0-1024-nvidia"


def tree(tmp_path, boot_once=True):
    sim = tmp_path / "sim"
    shutil.copytree(os.path.join(REPO, "tests", "fixtures", "gb10", "nominal"), str(sim), symlinks=True)
    for kernel in (OLD, NEW):
        (sim / "boot" / ("vmlinuz-" + kernel)).write_text("")
    with open(str(sim / "bin" / "modinfo.modules"), "a") as handle:
        handle.write("%s nvidia 580.159.03\n" % NEW)
    if boot_once:
        (sim / "etc" / "default" / "grub.d").mkdir(exist_ok=True)
        (sim / "etc" / "default" / "grub.d" / "90-sparkfleet-boot-once.cfg").write_text(
            'GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=30"\n')
    subprocess.run(["sh", str(sim / "bin" / "update-grub")], check=True)
    env = str(sim / "boot" / "grub" / "grubenv")
    menu = grub_boot.parse_grub_cfg((sim / "boot" / "grub" / "grub.cfg").read_text())
    subprocess.run(["grub-editenv", env, "create"], check=True)
    subprocess.run(["grub-editenv", env, "set", "saved_entry=" + grub_boot.entry_spec(menu, OLD),
                    "next_entry=" + grub_boot.entry_spec(menu, NEW)], check=True)
    return sim, env


def boot(sim):
    done = subprocess.run(["sh", STANDIN, str(sim)], capture_output=True, text=True, check=True)
    return done.stdout.strip(), (sim / "proc" / "sys" / "kernel" / "osrelease").read_text().strip()


def test_the_new_kernel_boots_once_and_the_saved_one_after_it(tmp_path):
    sim, env = tree(tmp_path)
    said, running = boot(sim)
    assert running == NEW and said == "booted %s with NVIDIA module 580.159.03" % NEW
    assert "next_entry=" not in subprocess.run(["grub-editenv", env, "list"], capture_output=True, text=True,
                                               check=True).stdout
    assert boot(sim)[1] == OLD  # the one-shot is used up: GRUB's default, the saved entry


def test_a_kernel_that_panics_falls_back_to_the_saved_entry(tmp_path):
    sim, dummy = tree(tmp_path)
    (sim / "boot" / ("sim-panics-" + NEW)).write_text("")
    said, running = boot(sim)
    assert running == OLD
    assert said.splitlines() == ["kernel %s panicked at boot; rebooted after 30 s (panic=30) into GRUB's default %s"
                                 % (NEW, OLD), "booted %s with NVIDIA module 580.142" % OLD]


def test_without_panic_on_the_command_line_a_panic_hangs_without_a_gpu(tmp_path):
    sim, dummy = tree(tmp_path, boot_once=False)
    (sim / "boot" / ("sim-panics-" + NEW)).write_text("")
    said, running = boot(sim)
    assert said == "kernel %s panicked at boot and hangs (no panic= on its command line)" % NEW
    assert not (sim / "proc" / "driver" / "nvidia" / "version").exists()
