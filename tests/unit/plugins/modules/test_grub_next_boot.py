# -*- coding: utf-8 -*-
"""The next boot made the running kernel's, as grub-reboot does: a real grub-editenv (package grub-common, installed
by `make setup`) writes the grubenv of a recorded grub.cfg (tests/fixtures/grub), and the next boot is computed
again the way GRUB computes it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import grub_boot
from ansible_collections.sparkfleet.gb10.plugins.modules import grub_next_boot

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "grub")
NEWEST, OLDER = "6.17.0-1014-nvidia", "6.11.0-1016-nvidia"


class Module(object):
    """A stand-in for AnsibleModule that runs its commands for real."""

    def __init__(self, tmp_path, check_mode=False, **params):
        boot = tmp_path / "boot"
        (boot / "grub").mkdir(parents=True)
        shutil.copy(os.path.join(FIXTURES, "grub.cfg"), str(boot / "grub" / "grub.cfg"))
        for release in (NEWEST, OLDER):
            (boot / ("vmlinuz-" + release)).write_text("")
        (tmp_path / "default" / "grub.d").mkdir(parents=True)
        shutil.copy(os.path.join(FIXTURES, "default-grub"), str(tmp_path / "default" / "grub"))
        self.params = dict(boot_dir=str(boot), grub_dir="", etc_default=str(tmp_path / "default"),
                           grub_editenv="grub-editenv", once=True)
        self.params.update(params)
        self.check_mode = check_mode
        self.grubenv = boot / "grub" / "grubenv"
        self.ran = []

    def get_bin_path(self, name, required=False):
        found = shutil.which(name)
        assert found, "%s is not installed: make setup installs grub-common" % name
        return found

    def run_command(self, argv, check_rc=False):
        self.ran.append(argv)
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert not check_rc or done.returncode == 0, done.stderr
        return done.returncode, done.stdout, done.stderr

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs["msg"])


def test_the_running_older_kernel_becomes_the_next_boot_once(tmp_path):
    """GRUB_DEFAULT=0 boots the newest kernel (the one a proof refused); next_entry makes the next boot the running
    one, written by the real grub-editenv in the block format GRUB reads."""
    module = Module(tmp_path, release=OLDER)
    result = grub_next_boot.run(module)
    assert result["changed"] and result["before"]["release"] == NEWEST
    assert result["next_boot"]["release"] == OLDER and result["next_boot"]["by"] == "next_entry"
    assert module.ran == [[shutil.which("grub-editenv"), str(module.grubenv), "set", "next_entry=" + result["next_entry"]]]
    raw = module.grubenv.read_bytes()
    assert len(raw) == 1024 and raw.startswith(grub_boot.GRUBENV_SIGNATURE.encode())
    assert grub_boot.read_grubenv(raw.decode())["next_entry"].endswith(">gnulinux-%s-advanced-3f0c6b9e-8d2a-4c71-9b5e-"
                                                                       "2a7d41c0e8f5" % OLDER)
    # a second run finds it done and writes nothing
    again = Module(tmp_path / "again", release=OLDER)
    again.grubenv.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(str(module.grubenv), str(again.grubenv))
    second = grub_next_boot.run(again)
    assert not second["changed"] and again.ran == []


def test_check_mode_says_what_it_would_write_and_writes_nothing(tmp_path):
    module = Module(tmp_path, check_mode=True, release=OLDER)
    result = grub_next_boot.run(module)
    assert result["changed"] and ">" in result["next_entry"] and module.ran == [] and not module.grubenv.exists()


def test_the_next_boot_already_the_release_changes_nothing(tmp_path):
    module = Module(tmp_path, release=NEWEST)
    result = grub_next_boot.run(module)
    assert not result["changed"] and result["next_entry"] is None and module.ran == []


def test_a_kernel_grub_cfg_has_no_entry_for_is_refused_with_the_fix(tmp_path):
    module = Module(tmp_path, release="7.0.0-1019-nvidia")
    with pytest.raises(AssertionError, match="no entry of .*grub.cfg boots kernel 7.0.0-1019-nvidia.*update-grub"):
        grub_next_boot.run(module)
    assert module.ran == []


def _saved_mode(module):
    """grub.cfg as update-grub writes it with GRUB_DEFAULT=saved (os_update_boot_once): 00_header's default line."""
    cfg = os.path.join(module.params["boot_dir"], "grub", "grub.cfg")
    with open(cfg) as handle:
        text = handle.read()
    assert 'set default="0"' in text
    with open(cfg, "w") as handle:
        handle.write(text.replace('set default="0"', 'set default="${saved_entry}"'))


def test_saved_entry_makes_a_kernel_grubs_default_from_now_on(tmp_path):
    """once=false writes saved_entry (grub-set-default): with GRUB_DEFAULT=saved the running older kernel stays the
    default while a newer one is tried once through next_entry; a panic of the newer one boots the default."""
    module = Module(tmp_path, release=OLDER, once=False)
    _saved_mode(module)
    result = grub_next_boot.run(module)
    assert result["changed"] and result["next_boot"]["release"] == OLDER and result["next_boot"]["by"] == "saved_entry"
    assert "saved_entry=gnulinux-advanced-" in subprocess.run(["grub-editenv", str(module.grubenv), "list"],
                                                              capture_output=True, text=True, check=True).stdout
    # the newest tried once on top of it: the next boot is the newest, the one after it the saved older kernel
    module.params.update(release=NEWEST, once=True)
    assert grub_next_boot.run(module)["next_boot"]["release"] == NEWEST
    assert grub_boot.next_boot(module.params["boot_dir"], None, module.params["etc_default"],
                               mode="default")["release"] == OLDER
    # again: nothing to write
    module.params.update(release=OLDER, once=False)
    assert grub_next_boot.run(module)["changed"] is False


def test_saved_entry_is_refused_where_grub_cfg_ignores_it(tmp_path):
    module = Module(tmp_path, release=OLDER, once=False)
    with pytest.raises(AssertionError, match="not written with GRUB_DEFAULT=saved"):
        grub_next_boot.run(module)
    assert module.ran == []


def test_saved_entry_is_written_where_grub_only_falls_back_to_the_kernel(tmp_path):
    """An empty saved_entry makes GRUB boot item 0, the newest kernel, which is the running one only until a newer
    kernel is installed: the entry is written anyway, naming the kernel."""
    module = Module(tmp_path, release=NEWEST, once=False)
    _saved_mode(module)
    assert grub_boot.next_boot(module.params["boot_dir"], None, module.params["etc_default"], mode="default")["by"] \
        == "fallback"
    result = grub_next_boot.run(module)
    assert result["changed"] and result["next_boot"]["by"] == "saved_entry" and result["next_boot"]["release"] == NEWEST
    # the submenu's entry of that kernel, not the top-level one that boots whichever kernel is newest
    assert result["next_entry"].startswith("gnulinux-advanced-") and ">gnulinux-%s-advanced-" % NEWEST in result["next_entry"]


@pytest.mark.parametrize("saved", ["0", "gnulinux-simple-"])
def test_a_saved_entry_that_boots_the_kernel_only_while_it_is_the_newest_is_rewritten(tmp_path, saved):
    module = Module(tmp_path, release=NEWEST, once=False)
    _saved_mode(module)
    menu_text = open(os.path.join(module.params["boot_dir"], "grub", "grub.cfg")).read()
    if saved != "0":
        saved = grub_boot.entry_spec(grub_boot.parse_grub_cfg(menu_text), NEWEST)  # the top-level entry
        assert saved.startswith("gnulinux-simple-")
    subprocess.run(["grub-editenv", str(module.grubenv), "create"], check=True)
    subprocess.run(["grub-editenv", str(module.grubenv), "set", "saved_entry=" + saved], check=True)
    assert grub_boot.next_boot(module.params["boot_dir"], None, module.params["etc_default"], mode="default")["release"] \
        == NEWEST
    result = grub_next_boot.run(module)
    assert result["changed"] and ">gnulinux-%s-advanced-" % NEWEST in result["next_entry"]
    assert grub_next_boot.run(module)["changed"] is False
