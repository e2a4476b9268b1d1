# -*- coding: utf-8 -*-
"""What an OS update would do to a Spark: apt's recorded simulations (tests/fixtures/apt_simulation) read into
what it installs and keeps back, the kernel the next boot would start, whether the NVIDIA module of the branch
exists for it, and the refusals of the rule book's kernel_updates and driver_branch rules."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.modules import os_update_plan

from fixture_files import FIXTURES, fixture_text, recorded_command  # tests/unit/fixture_files.py

SECURE_BOOT = os.path.join(FIXTURES, "secure_boot")
RUNNING = "6.17.0-1014-nvidia"


def recorded(name):
    return fixture_text("apt_simulation", name)


def fwupd_recorded(name):
    """(rc, stdout, stderr) of a real fwupdmgr recording (tests/fixtures/fwupd/index.json)."""
    return recorded_command("fwupd", name)[1]


def secure_boot_recorded(name):
    """The text of a file of tests/fixtures/secure_boot (README.md there says which are public records)."""
    return fixture_text("secure_boot", name)


def mokutil_recorded(name):
    """(rc, stdout, stderr) of mokutil --test-key, with the exit status of mokutil 0.6.0 to 0.7.2 (index.json)."""
    return recorded_command("secure_boot", name)[1]


def _newest_first(releases):
    return sorted(releases, key=lambda r: [int(n) for n in re.findall(r"\d+", r)], reverse=True)


def grub_cfg(releases, cmdline="quiet splash", default="0"):
    """A grub.cfg in the shape update-grub writes on Ubuntu 24.04 (tests/fixtures/grub/grub.cfg, shortened): the
    newest kernel's entry, then the submenu with an entry per kernel, newest first."""
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    entry = ("%(indent)smenuentry '%(title)s' --class ubuntu $menuentry_id_option '%(id)s' {\n"
             "%(indent)s\tlinux\t/boot/vmlinuz-%(r)s root=UUID=" + dev + " ro %(args)s $vt_handoff\n"
             "%(indent)s\tinitrd\t/boot/initrd.img-%(r)s\n%(indent)s}\n")
    ordered = _newest_first(releases)
    text = 'if [ "${next_entry}" ] ; then\n   set default="${next_entry}"\nelse\n   set default="%s"\nfi\n' % default
    text += entry % dict(indent="", title="Ubuntu", id="gnulinux-simple-" + dev, r=ordered[0], args=cmdline)
    text += "submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-%s' {\n" % dev
    for release in ordered:
        text += entry % dict(indent="\t", title="Ubuntu, with Linux " + release,
                             id="gnulinux-%s-advanced-%s" % (release, dev), r=release, args=cmdline)
    return text + "}\n"


class Host(object):
    """A stand-in for AnsibleModule: the host's kernel tree in tmp_path and the recorded answers of apt-get,
    dpkg-query and modinfo."""

    def __init__(self, tmp_path, simulation="", install=(0, "", ""), modules=None, kernels=(RUNNING,),
                 installed=(), files=None, fwupd=None, versions=None, audit=(0, "", ""),
                 check=(0, "Reading package lists...\nBuilding dependency tree...\n", ""), initrds=None,
                 signatures=None, mokutil=None, **params):
        boot = tmp_path / "boot"
        boot.mkdir()
        for kernel in kernels:
            (boot / ("vmlinuz-" + kernel)).write_text("")
        # update-initramfs writes one per installed kernel
        for kernel in (kernels if initrds is None else initrds):
            (boot / ("initrd.img-" + kernel)).write_text("")
        # installed packages' versions, as dpkg-query answers them
        self.versions = dict(versions or {})
        self.audit, self.check = audit, check
        # as the kernel packages leave it (linux-update-symlinks): the link on the newest installed kernel
        os.symlink("vmlinuz-" + _newest_first(kernels)[0], str(boot / "vmlinuz"))
        # GRUB's files as update-grub leaves them after the kernel packages' postinst: Ubuntu's defaults, no grubenv
        (boot / "grub").mkdir()
        (boot / "grub" / "grub.cfg").write_text(grub_cfg(kernels))
        (tmp_path / "default" / "grub.d").mkdir(parents=True)
        (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n'
                                                   'GRUB_CMDLINE_LINUX=""\n')
        # fwupdmgr's recorded answers, by subcommand; None: fwupd not installed
        self.fwupd = fwupd
        (tmp_path / "osrelease").write_text(RUNNING + "\n")
        for name, text in (files or {}).items():
            (tmp_path / name).write_text(text)
        self.simulation, self.install = simulation, install
        self.modules = dict(modules if modules is not None else {RUNNING: "580.142"})
        # how each kernel's module is signed (tests/fixtures/secure_boot): precompiled (Canonical's key), dkms (the
        # MOK), unsigned; the distribution's precompiled module unless said
        self.signatures = dict(signatures or {})
        # mokutil --test-key's recorded answer (mokutil_recorded); None: mokutil not installed
        self.mokutil = mokutil
        self.packages = set(installed)
        self.calls = []
        self.params = dict(stage="planned", branch="580",
                           forbidden_branches=rulebook.setting("driver_forbidden_branches"),
                           module_package=rulebook.setting("nvidia_kernel_module_package"),
                           dkms_package=rulebook.setting("nvidia_dkms_package"),
                           headers_package=rulebook.setting("kernel_headers_package"),
                           userspace_version="580.142", userspace_package="",
                           known_bad_kernels=rulebook.setting("known_bad_kernels"),
                           kernel_config_checks=rulebook.setting("kernel_config_checks"),
                           grub_dir="", etc_default=str(tmp_path / "default"),
                           accept_kernel_reason="", boot_dir=str(boot), proc_osrelease=str(tmp_path / "osrelease"),
                           modinfo="modinfo", module="nvidia", firmware=False, fwupdmgr="fwupdmgr",
                           release_holds=[], dpkg_status=str(tmp_path / "status"),
                           # no efivars directory unless a test makes one: Secure Boot unknown, judged as off
                           efivars=str(tmp_path / "efivars"),
                           secure_boot_efivar=rulebook.setting("secure_boot_efivar"),
                           trusted_signers=[item["signer"] for item in rulebook.setting("module_trusted_signers")],
                           mok_certificate=str(tmp_path / "mok" / "MOK.der"), mokutil="mokutil",
                           next_boot="grub", fallback="")
        self.params.update(params)
        # AnsibleModule's temporary directory (the status copy with the unit's holds lifted goes there)
        self.tmpdir = str(tmp_path)
        # apt's options of each simulation, by subcommand
        self.apt_options = {}

    def run_command(self, argv, environ_update=None):
        self.calls.append(argv)
        if argv[0] == "modinfo":
            assert argv[1] == "-k" and argv[3] == "-F" and argv[5:] == ["nvidia"], argv
            version = self.modules.get(argv[2])
            if not version:
                return 1, "", "modinfo: ERROR: Module nvidia not found.\n"
            if argv[4] == "version":
                return 0, version + "\n", ""
            signed = self.signatures.get(argv[2], "precompiled")
            # an unsigned module has no signature fields: modinfo -F prints nothing, and exits 0
            return 0, "" if signed == "unsigned" else secure_boot_recorded("modinfo-F-%s-%s.out" % (argv[4], signed)), ""
        if argv[0] == "/usr/bin/mokutil":
            assert argv[1:] == ["--test-key", self.params["mok_certificate"]] and environ_update == {"LC_ALL": "C"}, argv
            return self.mokutil
        if argv[0] == "dpkg-query":
            # the driver's packages are held: "hi", installed all the same
            assert argv[1:4] == ["-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Version}\n"], argv
            if argv[-1] in self.versions:
                return 0, "hi \t%s\t%s\n" % (argv[-1], self.versions[argv[-1]]), ""
            if argv[-1] in self.packages:
                return 0, "hi \t%s\t580.142-0ubuntu1\n" % argv[-1], ""
            return 1, "", "dpkg-query: no packages found matching %s\n" % argv[-1]
        if argv[0] == "/usr/bin/fwupdmgr":
            assert environ_update == {"LC_ALL": "C.UTF-8", "NO_COLOR": "1"} and argv[2:] == ["--json"], argv
            return self.fwupd[argv[1]]
        assert environ_update == {"LC_ALL": "C"}  # apt's and modinfo's words are read in English
        if argv == ["dpkg", "--audit"]:
            return self.audit
        if argv == ["apt-get", "check"]:
            return self.check
        assert argv[:4] == ["apt-get", "-s", "-o", "Debug::NoLocking=1"], argv
        rest = list(argv[4:])
        options = []
        while rest[0] == "-o":
            options += rest[:2]
            rest = rest[2:]
        self.apt_options[rest[0]] = options
        argv = argv[:4] + rest
        if argv[4] == "dist-upgrade":
            return (0, self.simulation, "")
        assert argv[4] == "install", argv
        return self.install

    def get_bin_path(self, name):
        if name == "mokutil":
            return "/usr/bin/mokutil" if self.mokutil is not None else None
        return "/usr/bin/" + name if self.fwupd is not None else None

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs["msg"])


UNKNOWN = (100, "Reading package lists...\n", "E: Unable to locate package linux-modules-nvidia-580-open-6.17.0-1018-nvidia\n")


def test_reads_what_the_upgrade_installs_and_keeps_back():
    good = os_update_plan.parse_simulation(recorded("good.txt"))
    assert good["install"] == [
        {"name": "linux-image-6.17.0-1016-nvidia", "from": None, "to": "6.17.0-1016.16"},
        {"name": "linux-image-nvidia", "from": "6.17.0.1014.14", "to": "6.17.0.1016.16"}]
    assert good["kept_back"] == [] and good["remove"] == []
    held = os_update_plan.parse_simulation(recorded("driver-held.txt"))
    assert held["install"] == []
    assert held["kept_back"] == ["libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-driver-580-open",
                                 "nvidia-utils-580"]


def test_phasing_is_read_as_kept_back():
    text = ("The following upgrades have been deferred due to phasing:\n"
            "  linux-modules-nvidia-580-open-nvidia\n"
            "0 upgraded, 0 newly installed, 0 to remove and 1 not upgraded.\n")
    assert os_update_plan.parse_simulation(text)["kept_back"] == ["linux-modules-nvidia-580-open-nvidia"]


@pytest.mark.parametrize("releases, newest", [
    (["6.17.0-1014-nvidia", "6.17.0-1016-nvidia"], "6.17.0-1016-nvidia"),
    (["6.17.0-1032-nvidia", "7.0.0-1019-nvidia"], "7.0.0-1019-nvidia"),
    # by number, not by text: 1100 after 1032
    (["6.17.0-1100-nvidia", "6.17.0-1032-nvidia"], "6.17.0-1100-nvidia"),
])
def test_the_newest_kernel_boots_next(tmp_path, releases, newest):
    host = Host(tmp_path, kernels=releases, modules=dict((r, "580.142") for r in releases), stage="installed")
    assert os_update_plan.run(host)["next_kernel"] == newest


def test_a_phased_module_is_installable_and_installed_by_name(tmp_path):
    host = Host(tmp_path, recorded("good.txt"))
    plan = os_update_plan.run(host)
    assert plan["new_kernels"] == ["6.17.0-1016-nvidia"]
    assert plan["next_kernel"] == "6.17.0-1016-nvidia"
    assert plan["nvidia_module"] == {"package": "linux-modules-nvidia-580-open-6.17.0-1016-nvidia",
                                     "mechanism": "package", "state": "installable", "version": None, "why": None,
                                     "branch_ok": True}
    assert plan["safe"] and plan["install"] == ["linux-modules-nvidia-580-open-6.17.0-1016-nvidia"]
    # installable means apt would install it now, with the driver held: simulated, not looked up
    assert ["apt-get", "-s", "-o", "Debug::NoLocking=1", "install",
            "linux-modules-nvidia-580-open-6.17.0-1016-nvidia"] in host.calls


def test_a_module_apt_cannot_install_now_is_refused(tmp_path):
    held = (100, "Reading package lists...\nThe following packages have unmet dependencies:\n"
                 " linux-modules-nvidia-580-open-6.17.0-1016-nvidia : Depends: nvidia-kernel-common-580 (>= 580.159)"
                 " but 580.142-0ubuntu1 is to be installed\n",
            "E: Unable to correct problems, you have held broken packages.\n")
    plan = os_update_plan.run(Host(tmp_path, recorded("good.txt"), install=held))
    assert plan["nvidia_module"]["state"] == "blocked" and not plan["safe"]
    assert "which apt cannot install now" in plan["problems"][0] and "held broken packages" in plan["problems"][0]


def test_with_the_dkms_driver_the_kernel_headers_are_what_the_module_needs(tmp_path):
    host = Host(tmp_path, recorded("good.txt"), installed={"nvidia-dkms-580-open"})
    plan = os_update_plan.run(host)
    assert plan["nvidia_module"]["mechanism"] == "dkms" and plan["nvidia_module"]["state"] == "dkms"
    assert plan["install"] == ["linux-headers-6.17.0-1016-nvidia"] and plan["safe"]
    (tmp_path / "none").mkdir()
    plan = os_update_plan.run(Host(tmp_path / "none", recorded("good.txt"), install=UNKNOWN,
                                   installed={"nvidia-dkms-580-open"}))
    assert plan["nvidia_module"]["state"] == "missing" and not plan["safe"]
    assert "the headers the DKMS driver builds its NVIDIA module from, linux-headers-6.17.0-1016-nvidia," in plan["problems"][0]


def test_a_kernel_without_its_module_is_refused(tmp_path):
    host = Host(tmp_path, recorded("nomodule.txt"), install=UNKNOWN)
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == "6.17.0-1018-nvidia" and plan["nvidia_module"]["state"] == "missing"
    assert not plan["safe"] and plan["install"] == []
    assert ("has no NVIDIA module: its NVIDIA module package linux-modules-nvidia-580-open-6.17.0-1018-nvidia is "
            "not installed" in plan["problems"][0])
    assert "After the reboot this host would have no GPU" in plan["problems"][0]


def test_a_known_bad_kernel_is_refused_by_name_with_its_sources(tmp_path):
    host = Host(tmp_path, recorded("knownbad.txt"))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == "7.0.0-1019-nvidia"
    assert plan["nvidia_module"]["state"] == "in_upgrade"
    assert plan["known_bad"]["release"] == "7.0.0-1019-nvidia"
    assert [p for p in plan["problems"] if "known bad on Sparks" in p and rulebook.R_KERNEL_1019_NCCL in p
            and "os_update_accept_kernel_reason" in p]


def test_a_known_bad_kernel_accepted_with_a_reason_is_a_warning(tmp_path):
    host = Host(tmp_path, recorded("knownbad.txt"), accept_kernel_reason="booted with kho=off")
    plan = os_update_plan.run(host)
    assert plan["warnings_list"] and "booted with kho=off" in plan["warnings_list"][0]
    assert plan["problems"] == [] and plan["safe"]


def test_a_kernel_with_kexec_handover_on_needs_kho_off_on_the_command_line(tmp_path):
    """kho=off counts where GRUB puts it on the next entry's command line: grub.cfg's linux line in the proof,
    GRUB's defaults (grub.d included, comments not) in a plan. Read from /proc/cmdline (the running boot's) or from
    a commented line, it passed a boot that would not have it."""
    kernels = (RUNNING, "7.0.0-1031-nvidia")
    config = "CONFIG_KEXEC_HANDOVER=y\nCONFIG_KEXEC_HANDOVER_ENABLE_DEFAULT=y\n"
    host = Host(tmp_path, kernels=kernels, modules={RUNNING: "580.142", "7.0.0-1031-nvidia": "580.142"},
                stage="installed")
    (tmp_path / "boot" / "config-7.0.0-1031-nvidia").write_text(config)
    # the defaults say kho=off, in a comment and in grub.d, but grub.cfg was written before: its line lacks it
    (tmp_path / "default" / "grub").write_text('#GRUB_CMDLINE_LINUX_DEFAULT="quiet splash kho=off"\n'
                                               'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n')
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == "7.0.0-1031-nvidia" and not plan["safe"]
    assert "CONFIG_KEXEC_HANDOVER_ENABLE_DEFAULT=y" in plan["problems"][0] and "lacks kho=off" in plan["problems"][0]
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg(kernels, "quiet splash kho=off"))
    assert os_update_plan.run(host)["safe"]
    # a plan reads the defaults update-grub will write from: grub.d's line counts, the comment does not
    (tmp_path / "plan").mkdir()
    host = Host(tmp_path / "plan", kernels=kernels, modules={RUNNING: "580.142", "7.0.0-1031-nvidia": "580.142"})
    (tmp_path / "plan" / "boot" / "config-7.0.0-1031-nvidia").write_text(config)
    (tmp_path / "plan" / "default" / "grub").write_text('#GRUB_CMDLINE_LINUX_DEFAULT="quiet splash kho=off"\n'
                                                        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n')
    assert "lacks kho=off" in os_update_plan.run(host)["problems"][0]
    (tmp_path / "plan" / "default" / "grub.d" / "50-kho.cfg").write_text(
        'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT kho=off"\n')
    assert os_update_plan.run(host)["safe"]


def test_an_upgrade_to_a_forbidden_branch_is_refused(tmp_path):
    host = Host(tmp_path, recorded("driver-unpinned.txt"))
    plan = os_update_plan.run(host)
    moved = [p for p in plan["problems"] if "forbidden branch" in p]
    assert len(moved) == 8 and "installs nvidia-driver-580-open 590.44.01-0ubuntu1" in " ".join(moved)
    (tmp_path / "held").mkdir()
    held = os_update_plan.run(Host(tmp_path / "held", recorded("driver-held.txt")))
    assert held["packages"]["kept_back"] and held["problems"] == []
    assert held["safe"] and held["next_kernel"] == RUNNING and held["nvidia_module"]["state"] == "installed"


def test_a_module_package_of_a_forbidden_branch_is_refused_by_its_name():
    plan = {"running_kernel": RUNNING, "next_kernel": RUNNING, "known_bad": None, "new_kernels": [],
            "nvidia_module": {"state": "installed", "branch_ok": True, "version": "580.142"},
            "packages": {"install": [{"name": "linux-modules-nvidia-590-open-6.17.0-1016-nvidia", "from": None,
                                      "to": "6.17.0-1016.16"}], "remove": [], "kept_back": []}}
    params = {"branch": "580", "forbidden_branches": ["590"], "accept_kernel_reason": "", "userspace_version": "",
              "stage": "planned", "module_package": "m"}
    judged = os_update_plan.judge(plan, params)
    assert not judged["safe"] and "of forbidden branch 590" in judged["problems"][0]


def test_a_reinstalled_kernel_is_not_new(tmp_path):
    text = "Inst linux-image-6.17.0-1014-nvidia [6.17.0-1014.14] (6.17.0-1014.15 Ubuntu:24.04/noble-updates [arm64])\n"
    plan = os_update_plan.run(Host(tmp_path, text))
    assert plan["new_kernels"] == [] and plan["next_kernel"] == RUNNING and plan["safe"]


def test_the_badmodule_recording_plans_safe_and_only_the_proof_can_see_it(tmp_path):
    plan = os_update_plan.run(Host(tmp_path, recorded("badmodule.txt")))
    assert plan["nvidia_module"]["state"] == "in_upgrade" and plan["safe"] and plan["install"] == []
    (tmp_path / "after").mkdir()
    proof = os_update_plan.run(Host(tmp_path / "after", kernels=(RUNNING, "6.17.0-1020-nvidia"), stage="installed"))
    assert proof["next_kernel"] == "6.17.0-1020-nvidia" and not proof["safe"]


def test_installed_stage_proves_the_newest_kernel_without_asking_apt(tmp_path):
    host = Host(tmp_path, kernels=(RUNNING, "6.17.0-1020-nvidia"), stage="installed")
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == "6.17.0-1020-nvidia" and plan["nvidia_module"]["state"] == "missing"
    assert not plan["safe"]
    assert "remove linux-image-6.17.0-1020-nvidia so that the next boot keeps 6.17.0-1014-nvidia" in plan["problems"][0]
    assert not [argv for argv in host.calls if argv[:2] == ["apt-get", "-s"]]
    (tmp_path / "ok").mkdir()
    host = Host(tmp_path / "ok", kernels=(RUNNING, "6.17.0-1016-nvidia"),
                modules={RUNNING: "580.142", "6.17.0-1016-nvidia": "580.142"}, stage="installed")
    plan = os_update_plan.run(host)
    assert plan["safe"] and plan["nvidia_module"]["state"] == "installed"
    assert plan["nvidia_module"]["version"] == "580.142" and plan["nvidia_module"]["branch_ok"]


def test_a_module_of_the_branch_but_not_the_user_space_version_is_refused(tmp_path):
    host = Host(tmp_path, kernels=(RUNNING, "6.17.0-1016-nvidia"), stage="installed",
                modules={RUNNING: "580.142", "6.17.0-1016-nvidia": "580.95.05"})
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "580.95.05, not the user-space driver's 580.142" in plan["problems"][0]


def test_a_module_of_another_branch_is_refused(tmp_path):
    host = Host(tmp_path, modules={RUNNING: "590.44.01"}, stage="installed", userspace_version="")
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "not the user-space driver's 580.* of branch 580" in plan["problems"][0]


def test_the_next_boot_is_grubs_choice_not_the_vmlinuz_link(tmp_path):
    """An older kernel installed after a newer one (the community's way back from 7.0.0-1019) moves the vmlinuz
    link to it, while GRUB boots the newest: the proof must judge the one GRUB boots."""
    newer = "6.17.0-1016-nvidia"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142"}, stage="installed")
    os.unlink(str(tmp_path / "boot" / "vmlinuz"))
    os.symlink("vmlinuz-" + RUNNING, str(tmp_path / "boot" / "vmlinuz"))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == newer and plan["next_boot"]["source"] == "grub.cfg"
    assert not plan["safe"] and "the next boot's kernel %s has no NVIDIA module" % newer in plan["problems"][0]


def test_a_one_shot_or_saved_entry_is_the_next_boot(tmp_path):
    """grub-reboot's next_entry wins over GRUB_DEFAULT; GRUB_DEFAULT=saved boots the grubenv's saved_entry."""
    older = "6.17.0-1012-nvidia"
    host = Host(tmp_path, kernels=(older, RUNNING), modules={older: "580.142", RUNNING: "580.142"}, stage="installed")
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    env = "# GRUB Environment Block\nnext_entry=gnulinux-advanced-%s>gnulinux-%s-advanced-%s\n" % (dev, older, dev)
    (tmp_path / "boot" / "grub" / "grubenv").write_text(env + "#" * (1024 - len(env)))
    assert os_update_plan.run(host)["next_kernel"] == older
    env = "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-%s>gnulinux-%s-advanced-%s\n" % (dev, older, dev)
    (tmp_path / "boot" / "grub" / "grubenv").write_text(env + "#" * (1024 - len(env)))
    assert os_update_plan.run(host)["next_kernel"] == RUNNING
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg((older, RUNNING), default="${saved_entry}"))
    (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n')
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == older and plan["next_boot"]["by"] == "saved_entry", plan["next_boot"]


def test_a_stale_or_missing_grub_cfg_is_refused_before_a_reboot(tmp_path):
    newer = "6.17.0-1016-nvidia"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"},
                stage="installed")
    assert os_update_plan.run(host)["safe"]
    # update-grub did not run after the new kernel came: grub.cfg still boots the running one
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg((RUNNING,)))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == RUNNING and not plan["safe"]
    assert "boots kernel %s, but update-grub would now make it boot %s" % (RUNNING, newer) in plan["problems"][0]
    os.unlink(str(tmp_path / "boot" / "grub" / "grub.cfg"))
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "cannot be proven" in plan["problems"][0]


def test_a_plan_boots_the_newest_kernel_left_after_the_upgrade(tmp_path):
    """In a plan, GRUB's next menu holds the kernels in /boot plus the new ones, less those the upgrade removes."""
    newer = "6.17.0-1016-nvidia"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"})
    host.simulation = ("Remv linux-image-%s [6.17.0-1016.16]\nRemv linux-modules-nvidia-580-open-%s [x]\n"
                       % (newer, newer))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == RUNNING and plan["next_boot"]["source"] == "predicted"
    assert plan["modules_removed"] == []  # the kernel goes with its module


def _fwupd(refresh="refresh", updates="get-updates-offer"):
    return {"refresh": fwupd_recorded(refresh), "get-updates": fwupd_recorded(updates)}


def test_firmware_updates_are_listed_from_fwupds_real_answer(tmp_path):
    host = Host(tmp_path, recorded("good.txt"), firmware=True, fwupd=_fwupd())
    plan = os_update_plan.run(host)
    assert plan["safe"] and plan["firmware"] == [{
        "device_id": "08d460be0f1f9f128413f816022a6439e0078018", "name": "Integrated Webcam\u2122",
        "vendor": "ACME Corp.", "plugin": "test", "version": "1.2.2", "update_version": "1.2.4",
        "releases": ["1.2.4", "1.2.3"], "summary": "Firmware for the ACME Corp Integrated Webcam",
        "remote": "fwupd-tests",
        "device_flags": ["updatable", "supported", "can-verify", "can-verify-image", "unsigned-payload",
                         "can-emulation-tag"],
        "release_flags": ["trusted-payload", "trusted-metadata", "is-upgrade"],
        "line": "Integrated Webcam\u2122 1.2.2 -> 1.2.4",
        "argv": ["/usr/bin/fwupdmgr", "update", "--assume-yes", "--no-reboot-check",
                 "08d460be0f1f9f128413f816022a6439e0078018"]}]
    # the metadata first, then the offer
    assert [argv[1] for argv in host.calls if argv[0] == "/usr/bin/fwupdmgr"] == ["refresh", "get-updates"]


def test_firmware_is_not_asked_when_off_or_when_proving(tmp_path):
    plan = os_update_plan.run(Host(tmp_path, recorded("good.txt"), fwupd={}))
    assert plan["firmware"] == [] and plan["safe"]
    (tmp_path / "proof").mkdir()
    proof = os_update_plan.run(Host(tmp_path / "proof", stage="installed", firmware=True, fwupd={}))
    assert proof["firmware"] == [] and proof["safe"]


@pytest.mark.parametrize("recording", ["get-updates-none", "get-updates-nodevice", "get-updates-none-text"])
def test_nothing_to_install_is_no_firmware_and_safe(tmp_path, recording):
    plan = os_update_plan.run(Host(tmp_path, recorded("good.txt"), firmware=True, fwupd=_fwupd(updates=recording)))
    assert plan["firmware"] == [] and plan["safe"]


def test_a_fwupd_that_cannot_refresh_makes_the_plan_unsafe_with_its_message(tmp_path):
    plan = os_update_plan.run(Host(tmp_path, recorded("good.txt"), firmware=True,
                                   fwupd=_fwupd(refresh="refresh-offline")))
    assert not plan["safe"] and plan["firmware"] == []
    assert ("fwupd cannot say which firmware updates it offers (fwupdmgr exited 101: Failed to download metadata "
            "for lvfs: network is unreachable" in plan["problems"][0])
    assert "os_update_firmware" in plan["problems"][0]


def test_firmware_on_without_fwupd_is_refused(tmp_path):
    plan = os_update_plan.run(Host(tmp_path, recorded("good.txt"), firmware=True))
    assert not plan["safe"] and "fwupdmgr is not installed: install fwupd" in plan["problems"][0]


# DGX OS as it ships (tests/fixtures/apt_simulation/dgxos, README.md there): the kernel, its precompiled NVIDIA module
# and the 580 user space move in one transaction, and the old kernel's module is removed.
OLD = "6.11.0-1016-nvidia"
NEW = "6.17.0-1014-nvidia"
USERSPACE = "libnvidia-compute-{branch}"


def dgxos(name):
    return recorded(os.path.join("dgxos", name))


def test_dgx_os_moves_kernel_module_and_user_space_together_and_removes_the_old_module(tmp_path):
    host = Host(tmp_path, simulation=dgxos("kernel-driver-move.txt"), kernels=(OLD,), modules={OLD: "580.95.05"},
                userspace_version="580.95.05", userspace_package=USERSPACE,
                versions={"libnvidia-compute-580": "580.95.05-0ubuntu0.24.04.2"},
                files={"osrelease": OLD + "\n"})
    plan = os_update_plan.run(host)
    assert plan["running_kernel"] == OLD and plan["next_kernel"] == NEW and plan["new_kernels"] == [NEW]
    assert plan["nvidia_module"]["state"] == "in_upgrade"
    assert plan["packages"]["remove"] == ["linux-modules-nvidia-580-open-" + OLD]
    # the user space the reboot will load is the upgrade's, not nvidia-smi's from before it
    assert plan["userspace"] == {"version": "580.142", "source": "upgrade", "package": "libnvidia-compute-580"}
    assert plan["modules_removed"] == [{"kernel": OLD, "package": "linux-modules-nvidia-580-open-" + OLD,
                                        "running": True}]
    assert plan["safe"], plan["problems"]
    assert any("kernel %s (the running one) stays installed without its NVIDIA module" % OLD in w
               for w in plan["warnings_list"])


# dpkg's status file of a Spark whose unit sparkfleet.gb10.nvidia_driver holds (stanzas shortened to the fields apt
# reads for a hold), and one package a person held for their own reasons.
STATUS = """Package: linux-nvidia-hwe-24.04
Status: hold ok installed
Architecture: arm64
Version: 6.11.0-1016.16

Package: nvidia-driver-580-open
Status: hold ok installed
Architecture: arm64
Version: 580.95.05-0ubuntu0.24.04.2

Package: linux-modules-nvidia-580-open-nvidia-hwe-24.04
Status: hold ok installed
Architecture: arm64
Version: 6.11.0-1016.16+1000

Package: wpasupplicant
Status: hold ok installed
Architecture: arm64
Version: 2:2.10-21ubuntu0.2

Package: nvidia-utils-580
Status: install ok installed
Architecture: arm64
Version: 580.95.05-0ubuntu0.24.04.2
"""


def test_the_holds_of_the_unit_are_lifted_in_a_copy_and_no_other():
    unit = rulebook.driver_unit("580")
    text, lifted = os_update_plan.lift_holds(STATUS, unit["held"] + unit["any_module"])
    assert lifted == ["linux-nvidia-hwe-24.04", "nvidia-driver-580-open",
                      "linux-modules-nvidia-580-open-nvidia-hwe-24.04"]
    # the person's hold stays; nvidia-utils-580 was not held; nothing else of the file changes
    assert "Package: wpasupplicant\nStatus: hold ok installed" in text
    assert text.count("Status: hold ") == 1 and text.count("Status: install ok installed") == 4
    assert [line for line in text.splitlines() if not line.startswith("Status:")] == [
        line for line in STATUS.splitlines() if not line.startswith("Status:")]


def test_the_plan_simulates_with_the_units_holds_lifted_and_says_which_to_lift(tmp_path):
    """With the unit held (as nvidia_driver leaves it), apt keeps kernel, module and user space back: the plan asks
    apt over a copy of dpkg's status without those holds, and names the holds the upgrade must lift."""
    unit = rulebook.driver_unit("580")
    host = Host(tmp_path, simulation=dgxos("kernel-driver-move.txt"), kernels=(OLD,), modules={OLD: "580.95.05"},
                userspace_version="580.95.05", userspace_package=USERSPACE,
                files={"osrelease": OLD + "\n", "status": STATUS},
                release_holds=unit["userspace"] + unit["any_module"] + unit["kernel"])
    plan = os_update_plan.run(host)
    options = host.apt_options["dist-upgrade"]
    assert options[0] == "-o" and options[1].startswith("Dir::State::status=")
    copy = options[1].split("=", 1)[1]
    assert copy != host.params["dpkg_status"] and "Status: hold ok installed" in open(copy).read()  # wpasupplicant
    assert (tmp_path / "status").read_text() == STATUS  # the host's own file is not touched
    # the three held packages of the unit all move in this upgrade; the person's hold is not lifted
    assert plan["holds_lifted"] == ["linux-nvidia-hwe-24.04", "nvidia-driver-580-open",
                                    "linux-modules-nvidia-580-open-nvidia-hwe-24.04"]
    assert plan["safe"], plan["problems"]


def test_every_hold_of_the_unit_is_lifted_when_only_the_kernel_moves(tmp_path):
    """A phased module: the kernel metapackages move, the module is installed by name, and it may need the newer
    user space, which is held. The upgrade must run in the state apt simulated: every hold of the unit lifted, not
    only those of the packages the dist-upgrade moves (else apt stops at 'held broken packages' after installing the
    kernel)."""
    host = Host(tmp_path, simulation=recorded("good.txt"), install=(0, "Inst x\n", ""), files={"status": STATUS},
                release_holds=rulebook.driver_unit("580")["held"])
    plan = os_update_plan.run(host)
    assert plan["install"] == ["linux-modules-nvidia-580-open-6.17.0-1016-nvidia"]
    assert host.apt_options["install"] == host.apt_options["dist-upgrade"] != []
    assert plan["holds_lifted"] == ["linux-nvidia-hwe-24.04", "nvidia-driver-580-open",
                                    "linux-modules-nvidia-580-open-nvidia-hwe-24.04"]


def test_nothing_to_upgrade_lifts_no_hold(tmp_path):
    host = Host(tmp_path, simulation="0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n",
                files={"status": STATUS}, release_holds=rulebook.driver_unit("580")["held"])
    plan = os_update_plan.run(host)
    assert host.apt_options["dist-upgrade"] != [] and plan["holds_lifted"] == [] and plan["safe"]
    # nothing lifted, yet every installed package of the unit is named, to be held again (a lost run's lifted holds)
    assert plan["unit_installed"] == os_update_plan.installed_of(STATUS, rulebook.driver_unit("580")["held"])
    assert "nvidia-driver-580-open" in plan["unit_installed"]


def test_a_status_file_in_another_encoding_is_copied_untouched(tmp_path):
    raw = STATUS.encode() + b"\nPackage: old-tool\nStatus: install ok installed\nDescription: caf\xe9\n"
    (tmp_path / "status").write_bytes(raw)
    host = Host(tmp_path, simulation=recorded("good.txt"), install=(0, "Inst x\n", ""),
                release_holds=rulebook.driver_unit("580")["held"])
    os_update_plan.run(host)
    copy = open(host.apt_options["dist-upgrade"][1].split("=", 1)[1], "rb").read()
    # the three holds of the unit lifted, every other byte as it was
    assert copy.count(b"Status: hold ") == 1 and copy.replace(b"Status: install ok", b"Status: hold ok") == raw.replace(
        b"Status: install ok", b"Status: hold ok")


def test_without_holds_to_lift_apt_reads_the_hosts_own_status(tmp_path):
    host = Host(tmp_path, simulation=recorded("good.txt"), install=(0, "Inst x\n", ""),
                files={"status": STATUS.replace("hold ok", "install ok")},
                release_holds=rulebook.driver_unit("580")["held"])
    plan = os_update_plan.run(host)
    assert host.apt_options["dist-upgrade"] == [] and plan["holds_lifted"] == []


def test_the_proof_after_the_move_compares_the_module_with_the_user_space_now_installed(tmp_path):
    """After the upgrade nvidia-smi (read before it) still says 580.95.05, the package says 580.142, and the new
    kernel's module is 580.142: the reboot loads a matching pair. Judged by the value read before the upgrade,
    every DGX OS release that moves the driver was refused."""
    def after(root, module):
        return Host(root, kernels=(OLD, NEW), modules={NEW: module}, stage="installed", userspace_version="580.95.05",
                    files={"osrelease": OLD + "\n"}, userspace_package=USERSPACE,
                    versions={"libnvidia-compute-580": "580.142-0ubuntu0.24.04.1"})

    plan = os_update_plan.run(after(tmp_path, "580.142"))
    assert plan["next_kernel"] == NEW and plan["userspace"]["source"] == "package"
    assert plan["safe"], plan["problems"]
    # the module still of the old user space (its package held back while the user space moved): refused
    (tmp_path / "held").mkdir()
    plan = os_update_plan.run(after(tmp_path / "held", "580.95.05"))
    assert not plan["safe"] and "580.95.05, not the user-space driver's 580.142" in plan["problems"][0]


@pytest.mark.parametrize("broken, words", [
    (dict(initrds=(OLD,)), "lacks initrd.img-%s in" % NEW),
    (dict(audit=(0, "The following packages are only half configured, probably due to problems\n"
                    " nvidia-kernel-common-580 NVIDIA binary kernel module support files\n", "")),
     "dpkg --audit reports packages left unpacked or half-configured"),
    (dict(check=(100, "Reading package lists...\n", "E: Unmet dependencies. Try 'apt --fix-broken install'\n")),
     "apt-get check finds broken dependencies: E: Unmet dependencies"),
])
def test_the_proof_refuses_a_boot_without_its_files_or_with_dpkg_or_apt_broken(tmp_path, broken, words):
    host = Host(tmp_path, kernels=(OLD, NEW), modules={NEW: "580.142"}, stage="installed",
                files={"osrelease": OLD + "\n"}, **broken)
    plan = os_update_plan.run(host)
    assert not plan["safe"] and any(words in problem for problem in plan["problems"]), plan["problems"]
    (tmp_path / "ok").mkdir()
    assert os_update_plan.run(Host(tmp_path / "ok", kernels=(OLD, NEW), modules={NEW: "580.142"}, stage="installed",
                                   files={"osrelease": OLD + "\n"}))["safe"]


def test_upstream_versions_of_debian_versions():
    assert os_update_plan.upstream_version("580.142-0ubuntu0.24.04.1") == "580.142"
    assert os_update_plan.upstream_version("1:580.95.05-0ubuntu1") == "580.95.05"
    assert os_update_plan.upstream_version("") is None


def test_a_kernel_pinned_by_its_grub_id_stays_the_next_boot(tmp_path):
    """GRUB_DEFAULT naming a kernel's entry by id (how Sparks are kept on a kernel): the proof finds grub.cfg in
    step with it (not stale), and a plan that brings a newer kernel still boots the pinned one."""
    older, dev = "6.17.0-1012-nvidia", "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    pinned = "gnulinux-advanced-%s>gnulinux-%s-advanced-%s" % (dev, older, dev)
    host = Host(tmp_path, kernels=(older, RUNNING), modules={older: "580.142", RUNNING: "580.142"}, stage="installed")
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg((older, RUNNING), default=pinned))
    (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT="%s"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n' % pinned)
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == older and plan["safe"], plan["problems"]
    host.params["stage"] = "planned"
    host.simulation = recorded("good.txt")  # brings 6.17.0-1016-nvidia
    plan = os_update_plan.run(host)
    assert plan["new_kernels"] == ["6.17.0-1016-nvidia"] and plan["next_kernel"] == older, plan["next_boot"]


def test_a_plan_on_a_host_without_grub_cfg_is_refused_before_anything_changes(tmp_path):
    host = Host(tmp_path, recorded("good.txt"), install=(0, "", ""))
    os.unlink(str(tmp_path / "boot" / "grub" / "grub.cfg"))
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "cannot be proven" in plan["problems"][0]


def test_a_driver_move_on_the_same_kernel_is_judged_by_the_proof_not_by_the_module_it_replaces(tmp_path):
    """The user space and the running kernel's module package move together (no new kernel): the module modinfo
    finds now (580.95.05) is replaced in the same transaction, so the plan does not compare it with 580.142."""
    moves = ("Inst libnvidia-compute-580 [580.95.05-0ubuntu0.24.04.2] (580.142-0ubuntu0.24.04.1 Ubuntu:24.04/noble-updates [arm64])\n"
             "Inst linux-modules-nvidia-580-open-%s [6.17.0-1014.14+1] (6.17.0-1014.14+2 Ubuntu:24.04/noble-updates [arm64])\n"
             % RUNNING)
    host = Host(tmp_path, simulation=moves, modules={RUNNING: "580.95.05"}, userspace_version="580.95.05",
                userspace_package=USERSPACE)
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == RUNNING and plan["nvidia_module"]["state"] == "in_upgrade"
    assert plan["userspace"]["version"] == "580.142" and plan["safe"], plan["problems"]
    # the user space moving alone, its module package kept back: the reboot would load 580.95.05 against 580.142
    host.simulation = moves.splitlines(True)[0]
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "580.95.05, not the user-space driver's 580.142" in plan["problems"][0]


# Secure Boot (rule secure_boot_modules): with it on, the kernel loads only a module signed by a key it trusts, which
# modinfo's version check cannot see. tests/fixtures/secure_boot holds the efivar, modinfo's and mokutil's answers.
EFIVAR = rulebook.setting("secure_boot_efivar")
NEXT = "6.17.0-1016-nvidia"


def secure_boot_host(root, state, stage="installed", mok=True, **kwargs):
    """A host whose efivarfs says Secure Boot STATE (on, off; None: no SecureBoot variable), with Ubuntu's MOK
    (tests/fixtures/secure_boot/MOK.der) where MOK; in the proof its next kernel NEXT is installed."""
    if stage == "installed":
        kwargs.setdefault("kernels", (RUNNING, NEXT))
        kwargs.setdefault("modules", {RUNNING: "580.142", NEXT: "580.142"})
    host = Host(root, stage=stage, **kwargs)
    (root / "efivars").mkdir()
    if state is not None:
        with open(os.path.join(SECURE_BOOT, "efivars-" + state, EFIVAR), "rb") as handle:
            (root / "efivars" / EFIVAR).write_bytes(handle.read())
    if mok:
        (root / "mok").mkdir()
        with open(os.path.join(SECURE_BOOT, "MOK.der"), "rb") as handle:
            (root / "mok" / "MOK.der").write_bytes(handle.read())
    return host


def _mokutil_calls(host):
    return [argv for argv in host.calls if argv[0] == "/usr/bin/mokutil"]


def test_the_efivar_is_the_kernel_globals_guid_and_its_fixture_has_the_efivarfs_layout():
    # EFI_GLOBAL_VARIABLE_GUID of include/linux/efi.h: 8be4df61-93ca-11d2-aa0d-00e098032b8c
    assert EFIVAR == "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
    for state, byte in (("on", b"\x01"), ("off", b"\x00")):
        with open(os.path.join(SECURE_BOOT, "efivars-" + state, EFIVAR), "rb") as handle:
            assert handle.read() == b"\x06\x00\x00\x00" + byte  # 4 attribute bytes (BS|RT), then the data byte


@pytest.mark.parametrize("content, state", [
    ("on", "on"), ("off", "off"),
    (None, "off"),  # efivarfs without the variable: firmware without Secure Boot, the kernel's "not found"
    (b"\x06\x00\x00\x00", "unknown"), (b"\x06\x00\x00\x00\x02", "unknown"),
])
def test_the_secure_boot_state_is_read_as_the_kernel_reads_it(tmp_path, content, state):
    host = secure_boot_host(tmp_path, content if content in ("on", "off") else None)
    if isinstance(content, bytes):
        (tmp_path / "efivars" / EFIVAR).write_bytes(content)
    plan = os_update_plan.run(host)
    assert plan["secure_boot"]["state"] == state and plan["safe"], plan["secure_boot"]
    # an efivar that cannot be read is said, not passed over: it is judged as off
    assert bool([w for w in plan["warnings_list"] if "Secure Boot state is unknown" in w]) == (state == "unknown")


def test_without_efivarfs_the_state_is_unknown_and_judged_as_off(tmp_path):
    host = Host(tmp_path, kernels=(RUNNING, NEXT), modules={RUNNING: "580.142", NEXT: "580.142"}, stage="installed",
                signatures={NEXT: "unsigned"})
    plan = os_update_plan.run(host)
    assert plan["secure_boot"]["state"] == "unknown" and "not booted by UEFI" in plan["secure_boot"]["source"]
    assert plan["safe"] and plan["warnings_list"] == []


def test_secure_boot_on_refuses_an_unsigned_module(tmp_path):
    host = secure_boot_host(tmp_path, "on", signatures={NEXT: "unsigned"}, mokutil=mokutil_recorded(
        "mokutil-test-key-enrolled"))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == NEXT and plan["nvidia_module"]["state"] == "installed"
    assert plan["secure_boot"]["state"] == "on" and plan["secure_boot"]["signed_by"] == "unsigned"
    assert not plan["safe"] and len(plan["problems"]) == 1
    problem = plan["problems"][0]
    assert "Secure Boot is on and the NVIDIA module of the next boot's kernel %s is not signed" % NEXT in problem
    assert "nvidia_driver_kernel_module: precompiled" in problem and "linux-modules-nvidia-580-open-" + NEXT in problem


def test_secure_boot_on_refuses_a_dkms_module_whose_mok_is_not_enrolled(tmp_path):
    host = secure_boot_host(tmp_path, "on", signatures={NEXT: "dkms"},
                            mokutil=mokutil_recorded("mokutil-test-key-not-enrolled"))
    plan = os_update_plan.run(host)
    report = plan["secure_boot"]
    assert report["signer"] == "spark-1 Secure Boot Module Signature key" and report["signed_by"] == "other"
    assert report["mok"] == {"certificate": host.params["mok_certificate"], "enrolled": "no",
                             "answer": "/var/lib/shim-signed/mok/MOK.der is not enrolled"}
    assert not plan["safe"] and len(plan["problems"]) == 1
    problem = plan["problems"][0]
    assert "is signed by 'spark-1 Secure Boot Module Signature key'" in problem
    assert "mokutil --test-key says it is not enrolled" in problem
    assert ("Fix: mokutil --import %s and confirm the enrolment at the next boot's MOK manager"
            % host.params["mok_certificate"]) in problem
    assert "nvidia_driver_kernel_module: precompiled" in problem


@pytest.mark.parametrize("rc", [0, 1])
def test_the_enrolled_mok_is_read_from_mokutils_words_not_its_exit_status(tmp_path, rc):
    """mokutil up to 0.7.2 exits 1 for an enrolled key and 0 for one that is not; later versions the other way
    round: only the words say it."""
    host = secure_boot_host(tmp_path, "on", signatures={NEXT: "dkms"},
                            mokutil=(rc,) + mokutil_recorded("mokutil-test-key-enrolled")[1:])
    plan = os_update_plan.run(host)
    assert plan["safe"], plan["problems"]
    assert plan["secure_boot"]["mok"]["enrolled"] == "yes" and len(_mokutil_calls(host)) == 1


@pytest.mark.parametrize("mokutil, words", [
    (None, "mokutil is not installed, so its enrolment cannot be checked"),
    (mokutil_recorded("mokutil-test-key-pending"), "it is only in the enrollment request"),
    ((1, "/var/lib/shim-signed/mok/MOK.der is already in db\n", ""),
     "answers '/var/lib/shim-signed/mok/MOK.der is already in db', not that it is already enrolled"),
])
def test_a_mok_not_proven_enrolled_is_refused(tmp_path, mokutil, words):
    plan = os_update_plan.run(secure_boot_host(tmp_path, "on", signatures={NEXT: "dkms"}, mokutil=mokutil))
    assert not plan["safe"] and words in plan["problems"][0], plan["problems"]


def test_a_module_signed_by_another_key_than_the_mok_is_refused(tmp_path):
    host = secure_boot_host(tmp_path, "on", signatures={NEXT: "dkms"},
                            mokutil=mokutil_recorded("mokutil-test-key-enrolled"))
    # the MOK enrolled is not the key the module was signed with: the module's sig_key is another serial
    (tmp_path / "mok" / "MOK.der").write_bytes(bytes(bytearray([0x30, 0x0a, 0x30, 0x08, 0xa0, 0x03, 0x02, 0x01,
                                                                0x02, 0x02, 0x01, 0x05])))
    plan = os_update_plan.run(host)
    assert not plan["safe"] and "not with the MOK certificate %s (serial 05)" % host.params["mok_certificate"] in (
        plan["problems"][0])
    assert "set os_update_mok_certificate to the certificate that signed it" in plan["problems"][0]


def test_secure_boot_on_loads_a_module_canonical_signed_without_asking_mokutil(tmp_path):
    host = secure_boot_host(tmp_path, "on", mokutil=mokutil_recorded("mokutil-test-key-not-enrolled"))
    plan = os_update_plan.run(host)
    assert plan["safe"], plan["problems"]
    assert plan["secure_boot"] == {"state": "on", "source": str(tmp_path / "efivars" / EFIVAR),
                                   "signer": "Canonical Ltd. Kernel Module Signing",
                                   "sig_key": "E9:DF:13:0F:92:92:A9:B7", "signed_by": "trusted", "mok": None}
    assert _mokutil_calls(host) == []


@pytest.mark.parametrize("signed, signer", [("unsigned", None), ("dkms", "spark-1 Secure Boot Module Signature key")])
def test_secure_boot_off_refuses_no_signature_but_reports_the_signer(tmp_path, signed, signer):
    host = secure_boot_host(tmp_path, "off", signatures={NEXT: signed})
    plan = os_update_plan.run(host)
    assert plan["safe"] and plan["problems"] == [] and plan["warnings_list"] == []
    assert plan["secure_boot"]["state"] == "off" and plan["secure_boot"]["signer"] == signer
    assert plan["secure_boot"]["signed_by"] == ("unsigned" if signed == "unsigned" else "other")
    assert plan["secure_boot"]["mok"] is None and _mokutil_calls(host) == []


def test_a_plan_refuses_a_dkms_build_whose_mok_is_not_enrolled_before_anything_changes(tmp_path):
    """The next kernel's module is not built yet (DKMS builds it when the kernel is installed): it cannot be read,
    but DKMS signs it with the MOK, so the plan checks the MOK's enrolment before the upgrade."""
    host = secure_boot_host(tmp_path, "on", stage="planned", simulation=recorded("good.txt"),
                            installed={"nvidia-dkms-580-open"}, mokutil=mokutil_recorded("mokutil-test-key-not-enrolled"))
    plan = os_update_plan.run(host)
    assert plan["nvidia_module"]["mechanism"] == "dkms" and plan["nvidia_module"]["state"] == "dkms"
    assert plan["secure_boot"]["signed_by"] == "dkms" and plan["secure_boot"]["mok"]["enrolled"] == "no"
    assert not plan["safe"] and len(plan["problems"]) == 1
    assert ("the DKMS driver builds the NVIDIA module of the next boot's kernel %s and signs it with the key of %s"
            % (NEXT, host.params["mok_certificate"])) in plan["problems"][0]
    assert "mokutil --import" in plan["problems"][0]
    # refused from what it read: apt only simulated, nothing installed, no modinfo of a module not built yet
    assert all(argv[:2] == ["apt-get", "-s"] or argv[0] in ("dpkg-query", "modinfo", "/usr/bin/mokutil")
               for argv in host.calls), host.calls
    # enrolled, the same plan is safe
    host.mokutil = mokutil_recorded("mokutil-test-key-enrolled")
    assert os_update_plan.run(host)["safe"]


def test_a_plan_takes_the_archives_module_as_signed(tmp_path):
    """The precompiled module the upgrade brings, or apt installs by name, is the distribution's signed package."""
    host = secure_boot_host(tmp_path, "on", stage="planned", simulation=recorded("good.txt"), mok=False)
    plan = os_update_plan.run(host)
    assert plan["nvidia_module"]["state"] == "installable" and plan["secure_boot"]["signed_by"] == "archive"
    assert plan["safe"] and _mokutil_calls(host) == []
    (tmp_path / "dgx").mkdir()
    host = secure_boot_host(tmp_path / "dgx", "on", stage="planned", simulation=dgxos("kernel-driver-move.txt"),
                            kernels=(OLD,), modules={OLD: "580.95.05"}, userspace_version="580.95.05",
                            files={"osrelease": OLD + "\n"}, mok=False)
    plan = os_update_plan.run(host)
    assert plan["nvidia_module"]["state"] == "in_upgrade" and plan["secure_boot"]["signed_by"] == "archive"
    assert plan["safe"], plan["problems"]


def test_the_mok_certificates_serial_is_what_modinfo_prints_as_sig_key():
    with open(os.path.join(SECURE_BOOT, "MOK.der"), "rb") as handle:
        der = bytearray(handle.read())
    assert os_update_plan.certificate_serial(der) == secure_boot_recorded("modinfo-F-sig_key-dkms.out").strip()
    assert os_update_plan.certificate_serial(bytearray(b"not a certificate")) is None
    assert os_update_plan.certificate_serial(bytearray()) is None


def test_the_secure_boot_facts_are_the_rule_books():
    """The module's defaults and the role's are the rule book's (rule secure_boot_modules), passed by every task
    that calls the module."""
    import yaml
    doc = yaml.safe_load(os_update_plan.DOCUMENTATION)["options"]
    assert doc["secure_boot_efivar"]["default"] == rulebook.setting("secure_boot_efivar")
    assert doc["mok_certificate"]["default"] == rulebook.setting("mok_certificate")
    assert doc["trusted_signers"]["default"] == [e["signer"] for e in rulebook.setting("module_trusted_signers")]
    roles = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "os_update")
    with open(os.path.join(roles, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert "'secure_boot_efivar'" in defaults["os_update_secure_boot_efivar"]
    assert "'mok_certificate'" in defaults["os_update_mok_certificate"]
    assert "'module_trusted_signers'" in defaults["os_update_trusted_signers"]
    calls = 0
    for name in ("plan.yml", "upgrade.yml", "gates.yml"):
        with open(os.path.join(roles, "tasks", name)) as handle:
            text = handle.read()
        calls += text.count("sparkfleet.gb10.os_update_plan:")
        for option in ("efivars", "secure_boot_efivar", "trusted_signers", "mok_certificate", "mokutil"):
            assert text.count("    %s: \"{{ os_update_%s }}\"" % (option, option)) == text.count(
                "sparkfleet.gb10.os_update_plan:"), (name, option)
    assert calls == 3


def test_boot_once_proves_the_newest_kernel_and_its_fallback_to_the_running_one(tmp_path):
    """os_update_boot_once: GRUB_DEFAULT=saved keeps the running kernel GRUB's default (saved_entry) while the newest
    one is booted once; the proof judges the newest (next_boot newest), and GRUB's default must be the running
    kernel, where a boot of the newest that panics falls back."""
    newer = "6.17.0-1016-nvidia"
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"},
                stage="installed", next_boot="newest", fallback=RUNNING)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg((RUNNING, newer), "quiet splash panic=30",
                                                                  default="${saved_entry}"))
    (tmp_path / "default" / "grub.d" / "90-sparkfleet-boot-once.cfg").write_text(
        'GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=30"\n')
    env = "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-%s>gnulinux-%s-advanced-%s\n" % (dev, RUNNING, dev)
    (tmp_path / "boot" / "grub" / "grubenv").write_text(env + "#" * (1024 - len(env)))
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == newer and plan["safe"], plan["problems"]
    assert plan["fallback"] == {"release": RUNNING, "by": "saved_entry"}
    # GRUB's own next boot is the saved running kernel: without next_boot newest there would be nothing to reboot for
    host.params.update(next_boot="grub")
    assert os_update_plan.run(host)["next_kernel"] == RUNNING
    # saved_entry unset: GRUB's default falls to item 0, the newest kernel itself, so a panic would boot it again
    (tmp_path / "boot" / "grub" / "grubenv").unlink()
    host.params.update(next_boot="newest")
    plan = os_update_plan.run(host)
    assert not plan["safe"] and plan["fallback"]["release"] == newer
    assert "GRUB's default boot is %s" % newer in plan["problems"][0] and "not %s" % RUNNING in plan["problems"][0]


@pytest.mark.parametrize("cmdline, words", [
    ("quiet splash", "no panic="),
    ("quiet splash panic=30 panic=0", "panic=0"),
])
def test_boot_once_refuses_a_boot_that_would_not_reboot_on_a_panic(tmp_path, cmdline, words):
    newer = "6.17.0-1016-nvidia"
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"},
                stage="installed", next_boot="newest", fallback=RUNNING)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(grub_cfg((RUNNING, newer), cmdline, default="${saved_entry}"))
    (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="%s"\n' % cmdline)
    env = "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-%s>gnulinux-%s-advanced-%s\n" % (dev, RUNNING, dev)
    (tmp_path / "boot" / "grub" / "grubenv").write_text(env + "#" * (1024 - len(env)))
    plan = os_update_plan.run(host)
    assert not plan["safe"] and plan["fallback"]["release"] == RUNNING
    assert [p for p in plan["problems"] if "has %s on its command line" % words in p], plan["problems"]


def test_boot_once_refuses_a_grub_that_cannot_clear_its_one_shot_entry(tmp_path):
    newer = "6.17.0-1016-nvidia"
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"},
                stage="installed", next_boot="newest", fallback=RUNNING)
    text = grub_cfg((RUNNING, newer), "quiet splash panic=30", default="${saved_entry}")
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text("# GRUB lacks write support for /dev/mapper/vg-root\n" + text)
    (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash panic=30"\n')
    env = "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-%s>gnulinux-%s-advanced-%s\n" % (dev, RUNNING, dev)
    (tmp_path / "boot" / "grub" / "grubenv").write_text(env + "#" * (1024 - len(env)))
    plan = os_update_plan.run(host)
    assert not plan["safe"] and [p for p in plan["problems"] if "GRUB lacks write support" in p], plan["problems"]


def test_without_boot_once_no_fallback_is_judged(tmp_path):
    newer = "6.17.0-1016-nvidia"
    host = Host(tmp_path, kernels=(RUNNING, newer), modules={RUNNING: "580.142", newer: "580.142"}, stage="installed")
    plan = os_update_plan.run(host)
    assert plan["next_kernel"] == newer and plan["safe"] and plan["fallback"] is None


def test_installed_of_names_the_units_installed_packages_held_or_not():
    status = ("Package: a\nStatus: hold ok installed\nVersion: 1\n\nPackage: b\nStatus: install ok installed\n"
              "Version: 1\n\nPackage: c\nStatus: deinstall ok config-files\nVersion: 1\n\nPackage: d\n"
              "Status: install ok installed\nVersion: 1\n")
    assert os_update_plan.installed_of(status, ["a", "b", "c", "x"]) == ["a", "b"]
