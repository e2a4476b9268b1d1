#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: os_update_plan
short_description: What an OS update would do to a Spark, and whether it keeps the GPU after the reboot
description:
  - Asks apt what C(apt-get dist-upgrade) would install (C(apt-get -s)), works out the kernel the next boot
    would start as GRUB computes it (C(plugins/module_utils/grub_boot.py), the menu update-grub writes for the
    kernels installed after the upgrade, C(GRUB_DEFAULT) of C(/etc/default/grub) and C(/etc/default/grub.d/*.cfg),
    the grubenv's C(saved_entry) and C(next_entry)), and whether the NVIDIA kernel module of
    the pinned branch exists for that kernel, installed (C(modinfo -k)), brought by the upgrade, installable now
    (C(apt-get -s install), the unit's holds lifted as for the upgrade), or built by the DKMS driver from headers that are.
  - DGX OS builds the NVIDIA modules for each kernel as their own package (rule C(kernel_updates)); an upgrade
    that brings a kernel without it leaves the Spark without its GPU after the reboot.
  - Refuses, with the fix, a next kernel named in the rule book's known-bad list, a missing module, a module
    of another branch, and an upgrade that would move a driver package off the branch.
  - With O(stage=installed) it does not simulate; it proves that the kernel the next boot starts (the entry
    C(grub.cfg) boots, which must be the one update-grub would choose now; a stale C(grub.cfg) is refused) has the
    module of the user space now installed, its image and initrd, that dpkg has no package
    half-installed (C(dpkg --audit)) and that apt's dependencies hold (C(apt-get check)), the check before a reboot.
  - On DGX OS the kernel's metapackages, the NVIDIA module package and the driver's user space move as one, and
    the nvidia_driver role holds them together between updates. O(release_holds) names them; the plan simulates the
    upgrade with their holds lifted (C(apt-get -s) over a copy of dpkg's status file, nothing changed), and
    RV(holds_lifted) says which holds the update must lift for the packages it moves (and set again after).
  - The upgrade's removals (C(Remv)) count. A kernel image it removes is no candidate for the next boot, and an
    installed kernel whose NVIDIA module it removes (DGX OS removes the old kernel's module when the driver moves)
    is reported, with the running kernel named when it is that one (a fallback boot into it has no GPU).
  - With O(firmware), it also lists the firmware updates C(fwupdmgr get-updates --json) offers, after
    C(fwupdmgr refresh) (the metadata of fwupd's remotes, as the role refreshes apt's package lists first).
  - With Secure Boot on (the EFI variable SecureBoot, read from efivarfs), it refuses a next kernel whose NVIDIA
    module the kernel would not load (rule C(secure_boot_modules)) - unsigned, or signed by a key the kernel does not
    trust by itself (O(trusted_signers)) that is not an enrolled MOK (C(mokutil --test-key)). In a plan, a module the
    DKMS driver will build needs its MOK enrolled already; the distribution's module package is signed.
  - It only reads (with O(firmware), fwupd's metadata is refreshed); it answers the same in check mode.
version_added: 0.1.0
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  stage:
    description:
      - C(planned) simulates the upgrade; C(installed) judges the kernels already installed.
    type: str
    choices: [planned, installed]
    default: planned
  branch:
    description: The driver branch the module must belong to (rule C(driver_branch)).
    type: str
    required: true
  module_package:
    description: The module package's name, with C({branch}) and C({kernel}) (rule C(kernel_updates)).
    type: str
    required: true
  dkms_package:
    description:
      - The DKMS driver package, with C({branch}). When it is installed the module is built for a kernel from its
        headers, so the next kernel's headers are what must be installed or installable (rule C(kernel_updates)).
    type: str
    default: ""
  headers_package:
    description: The kernel headers package, with C({kernel}).
    type: str
    default: linux-headers-{kernel}
  userspace_version:
    description:
      - The user-space driver's version (nvidia-smi, read before the upgrade); an installed module of another version
        is refused (rule C(driver_reboot_pending)). Empty, any version of O(branch).
      - Where O(userspace_package) is installed, its version wins, read when the module runs; with O(stage=planned),
        the version the upgrade moves it to. On DGX OS the kernel, its module and the 580 user space move in one
        transaction, so the proof after the upgrade compares the module with the user space the reboot will load.
    type: str
    default: ""
  userspace_package:
    description:
      - The package whose version is the user-space driver's (rule C(kernel_updates)), with C({branch}). Empty, only
        O(userspace_version).
    type: str
    default: ""
  kernel_config_checks:
    description:
      - Build options of the next kernel (read from C(<boot_dir>/config-<kernel>) once it is installed) refused
        unless the next boot's command line holds a word, each C(option), C(value), C(unless_cmdline), C(why),
        C(fix) and C(sources). The command line is the next entry's, its C(linux) line in C(grub.cfg), or in a plan
        the one update-grub will write from GRUB's defaults (a commented line counts for nothing).
    type: list
    elements: dict
    default: []
  grub_dir:
    description: Where C(grub.cfg) and C(grubenv) are; empty, C(<boot_dir>/grub).
    type: path
    default: ""
  etc_default:
    description:
      - The directory of GRUB's defaults, C(grub) and C(grub.d/*.cfg) (C(GRUB_DEFAULT), C(GRUB_CMDLINE_LINUX),
        C(GRUB_CMDLINE_LINUX_DEFAULT)), read as update-grub sources them.
    type: path
    default: /etc/default
  forbidden_branches:
    description:
      - Driver branches no NVIDIA package may move to (rule C(driver_branch)); the upgrade is refused when it would
        install a version of one (the driver pin missing or outranked).
    type: list
    elements: str
    default: []
  known_bad_kernels:
    description: Kernel releases refused by name, each with C(release), C(why), C(fix) and C(sources).
    type: list
    elements: dict
    default: []
  accept_kernel_reason:
    description: Why a known-bad next kernel is accepted on this host anyway; empty refuses it.
    type: str
    default: ""
  boot_dir:
    description: Where the kernel images (C(vmlinuz-<release>)) and their initrds are.
    type: path
    default: /boot
  proc_osrelease:
    description: The running kernel's release.
    type: path
    default: /proc/sys/kernel/osrelease
  modinfo:
    description: The modinfo program.
    type: str
    default: modinfo
  module:
    description: The kernel module's name.
    type: str
    default: nvidia
  firmware:
    description:
      - With O(stage=planned), refresh fwupd's metadata and list the firmware updates it offers (RV(firmware)).
        A fwupd that cannot refresh or answer makes the plan unsafe.
    type: bool
    default: false
  fwupdmgr:
    description: The fwupdmgr program.
    type: str
    default: fwupdmgr
  release_holds:
    description:
      - Held packages whose holds the OS update lifts for the packages it moves (rule C(kernel_updates), the filter
        C(sparkfleet.gb10.driver_unit)); the plan simulates with them lifted. Other holds stay.
    type: list
    elements: str
    default: []
  dpkg_status:
    description: dpkg's status file (where its holds are), copied with O(release_holds) lifted for the simulation.
    type: path
    default: /var/lib/dpkg/status
  efivars:
    description:
      - Where efivarfs shows the EFI variables, the Secure Boot state among them (RV(secure_boot)). Without this
        directory the state is unknown (not booted by UEFI) and judged as off.
    type: path
    default: /sys/firmware/efi/efivars
  secure_boot_efivar:
    description:
      - The file of the EFI variable SecureBoot in O(efivars), 4 attribute bytes then 1 (on) or 0 (off); absent, the
        firmware has no Secure Boot (rule C(secure_boot_modules)).
    type: str
    default: SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
  trusted_signers:
    description:
      - The signers (modinfo's C(signer)) of keys the kernel trusts by itself (rule C(secure_boot_modules)). With
        Secure Boot on, a module signed by another key loads only when that key is an enrolled MOK (checked with
        C(mokutil --test-key) on O(mok_certificate)), and an unsigned module is refused.
    type: list
    elements: str
    default: [Canonical Ltd. Kernel Module Signing, Canonical Ltd. Kernel Module Signing 2025 Kmod]
  mok_certificate:
    description:
      - The MOK certificate (DER) the DKMS driver signs the modules it builds with (rule C(secure_boot_modules)).
        With Secure Boot on, a module signed with it loads only once it is enrolled.
    type: path
    default: /var/lib/shim-signed/mok/MOK.der
  mokutil:
    description: The mokutil program (package mokutil); with Secure Boot on and a MOK-signed module, a host without it is refused.
    type: str
    default: mokutil
  next_boot:
    description:
      - C(grub), the kernel GRUB boots next as the host stands (its one-shot C(next_entry), else C(GRUB_DEFAULT)). C(newest),
        the newest kernel's entry (item 0 of the menu update-grub writes), the kernel an update with
        C(os_update_boot_once) boots once, while GRUB's default stays the kernel proven before.
    type: str
    choices: [grub, newest]
    default: grub
  fallback:
    description:
      - With O(stage=installed), the kernel GRUB's default boot (the one after a one-shot C(next_entry)) must start, the
        one a failed boot of the next kernel falls back to (C(os_update_boot_once), the running kernel). Empty, not
        checked.
    type: str
    default: ""
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
attributes:
  check_mode:
    description: Reads only (with O(firmware) it refreshes fwupd's metadata); the same answer as a real run.
    support: full
  diff_mode:
    support: none
  idempotent:
    description: Reads only.
    support: full
"""

EXAMPLES = r"""
- name: What an update would do, and whether it is safe
  sparkfleet.gb10.os_update_plan:
    branch: "580"
    module_package: linux-modules-nvidia-{branch}-open-{kernel}
    known_bad_kernels: "{{ lookup('sparkfleet.gb10.rulebook', 'known_bad_kernels') }}"
  register: plan
"""

RETURN = r"""
running_kernel:
  description: The running kernel's release.
  type: str
  returned: always
next_kernel:
  description: The kernel the next boot starts after the upgrade (O(stage=planned)) or now (O(stage=installed)).
  type: str
  returned: always
next_boot:
  description:
    - How GRUB chooses it (C(grub_boot.next_boot)) - C(release), C(cmdline) (words from C(root=) on), C(source)
      (C(predicted) in a plan, C(grub.cfg) in the proof), C(path) and C(by) (which setting chose the entry),
      C(reason) (a fallback's), C(predicted) (the release update-grub would boot).
  type: dict
  returned: always
fallback:
  description: With O(fallback), GRUB's default boot, C(release) and C(by); null otherwise.
  type: dict
  returned: always
new_kernels:
  description: Kernel releases the upgrade installs.
  type: list
  elements: str
  returned: always
packages:
  description: The upgrade's C(install) (name, from, to), C(remove) and C(kept_back) lists.
  type: dict
  returned: always
nvidia_module:
  description:
    - For the next kernel, C(package), C(state) (C(installed), C(in_upgrade), C(installable), C(missing)),
      C(version) (installed, else the candidate) and C(branch_ok).
  type: dict
  returned: always
userspace:
  description:
    - The user-space driver the module must match, C(version) and where it was read from, C(source)
      (C(package) installed, C(upgrade) the version the upgrade installs, C(parameter) O(userspace_version)).
  type: dict
  returned: always
modules_removed:
  description:
    - Installed kernels (not removed themselves) whose NVIDIA module package the upgrade removes, each
      C(kernel), C(package) and C(running).
  type: list
  elements: dict
  returned: always
holds_lifted:
  description:
    - The packages of O(release_holds) held now, whose holds the update lifts for the upgrade (the state the plan
      simulated) and sets again after; empty when the upgrade changes nothing, and with O(stage=installed).
  type: list
  elements: str
  returned: always
unit_installed:
  description:
    - The packages of O(release_holds) installed now, held or not (with O(stage=planned)); the update holds each
      again after its upgrade, whatever the outcome.
  type: list
  elements: str
  returned: always
install:
  description:
    - Packages to install beside the upgrade (the next kernel's module, or its headers, when the upgrade leaves
      them out).
  type: list
  elements: str
  returned: always
known_bad:
  description: The rule book's entry of the next kernel, or null.
  type: dict
  returned: always
problems:
  description: Why this update is not safe, each with the fix; empty when it is.
  type: list
  elements: str
  returned: always
firmware:
  description:
    - With O(firmware), the updates fwupd offers, one per device, C(device_id), C(name), C(vendor), C(plugin),
      C(version), C(update_version) (the release C(fwupdmgr update) installs), C(releases), C(summary), C(remote),
      C(device_flags) and C(release_flags), C(line) (the device, its version and the update's, for a person) and
      C(argv) (the command that installs it); else empty.
  type: list
  elements: dict
  returned: always
secure_boot:
  description:
    - The Secure Boot state, C(state) (C(on), C(off), C(unknown) judged as off) and C(source) (the EFI variable read,
      or why there is none), and how the next kernel's NVIDIA module is signed - C(signer) and C(sig_key) (modinfo's,
      of an installed module), C(signed_by) (C(trusted) by a key of O(trusted_signers), C(other) by another key, a
      MOK that must be enrolled, C(unsigned), C(unnamed) signed by an unreadable signer; in a plan C(archive) the
      distribution's signed package, C(dkms) built and signed by the DKMS driver; null without a module), and
      C(mok) (with Secure Boot on and a MOK to check - C(certificate), C(enrolled) as C(yes), C(no), C(pending),
      C(no_mokutil), C(no_certificate) or C(unknown), and mokutil's C(answer); else null).
  type: dict
  returned: always
warnings_list:
  description: What is accepted but worth saying (a known-bad kernel accepted with a reason).
  type: list
  elements: str
  returned: always
safe:
  description: No problem found.
  type: bool
  returned: always
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.gb10.plugins.module_utils import dpkg, fwupd, grub_boot, rulebook

_INST = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<new>\S+)")
_REMV = re.compile(r"^Remv (?P<name>\S+)")
_KERNEL_IMAGE = re.compile(r"^linux-image-(?P<release>\d\S*)$")
_UPSTREAM = re.compile(r"^(?:\d+:)?(?P<upstream>[^-]+)")
_PACKAGE = re.compile(r"^Package: *(\S+)", re.M)
_HOLD = re.compile(r"^(Status: *)hold ", re.M)
_INSTALLED = re.compile(r"^Status: *(install|hold) ok installed$", re.M)


def parse_simulation(text):
    """apt-get -s output: what it installs (name, old, new), removes, and keeps back."""
    install, remove, kept = [], [], []
    in_kept = False
    for line in text.splitlines():
        if in_kept:
            if line.startswith("  "):
                kept.extend(line.split())
                continue
            in_kept = False
        # apt's own list, and (apt 2.7, Ubuntu 24.04) the upgrades phasing holds back
        if line.startswith(("The following packages have been kept back",
                            "The following upgrades have been deferred due to phasing")):
            in_kept = True
            continue
        found = _INST.match(line)
        if found:
            install.append({"name": found.group("name"), "from": found.group("old"), "to": found.group("new")})
            continue
        found = _REMV.match(line)
        if found:
            remove.append(found.group("name"))
    return {"install": install, "remove": remove, "kept_back": kept}


def next_boot(params, running, new=(), removed=(), planned=True):
    """The next boot as GRUB computes it (``grub_boot.next_boot``): in a plan, over the kernels installed once the
    upgrade has run (those in boot_dir and the new ones, less the images it removes); else as grub.cfg stands. The
    running kernel where no entry boots a kernel (a plan on a host without GRUB's files keeps it)."""
    releases = None
    if planned:
        installed = grub_boot.installed_kernels(params["boot_dir"])
        releases = [r for r in set(installed) | set(new) | set([running]) if "linux-image-" + r not in removed]
    found = grub_boot.next_boot(params["boot_dir"], params["grub_dir"] or None, params["etc_default"], releases,
                                mode="newest" if params.get("next_boot") == "newest" else "next")
    return found


# 00_header's comment in a grub.cfg whose GRUB cannot write its environment block (/boot on LVM, RAID, btrfs, zfs):
# a next_entry is then never cleared, and a kernel that panics would be booted again and again.
NO_WRITE_SUPPORT = "GRUB lacks write support"


def fallback_problems(params, kernel, running, boot):
    """With os_update_boot_once (O(fallback)): GRUB's default boot, the one after a one-shot next_entry, must be the
    kernel a failed boot of KERNEL falls back to; the boot of KERNEL (BOOT, its entry) must reboot on a panic
    (``panic=`` above 0 on its command line, the last one counting); and GRUB must be able to clear the one-shot
    entry as it boots it. ``([problems], fallback)``."""
    if not params["fallback"]:
        return [], None
    found = grub_boot.next_boot(params["boot_dir"], params["grub_dir"] or None, params["etc_default"], mode="default")
    fallback = {"release": found["release"], "by": found["by"]}
    problems = []
    if found["release"] != params["fallback"]:
        problems.append(
            "GRUB's default boot is %s (%s), not %s: a boot of %s that fails (a panic) would not fall back to the "
            "kernel the host runs. os_update_boot_once sets GRUB_DEFAULT=saved and saved_entry before the upgrade; "
            "run update-grub, check %s/grub.d, and update again" % (
                found["release"], found["by"], params["fallback"], kernel, params["etc_default"]))
    panics = [word.split("=", 1)[1] for word in boot.get("cmdline") or [] if word.startswith("panic=")]
    if not panics or not panics[-1].isdigit() or int(panics[-1]) <= 0:
        problems.append(
            "the entry that boots %s has %s on its command line: a panic would not reboot the host into %s (a Spark has "
            "no BMC). os_update_boot_once writes panic=os_update_panic_timeout (above 0) into GRUB's defaults; a file of "
            "%s/grub.d read after it may set GRUB_CMDLINE_LINUX_DEFAULT without it; fix it, run update-grub, update again"
            % (kernel, ("panic=" + panics[-1]) if panics else "no panic=", params["fallback"], params["etc_default"]))
    cfg = grub_boot.read_file(boot["grub_cfg"]) if boot.get("grub_cfg") else None
    if cfg and NO_WRITE_SUPPORT in cfg:
        problems.append(
            "%s says '%s' (/boot on LVM, RAID, btrfs or zfs): the one-shot next_entry would not be cleared as it boots, "
            "and a kernel that panics would boot again and again. Turn os_update_boot_once off for this host" % (
                boot["grub_cfg"], NO_WRITE_SUPPORT))
    return problems, fallback


def grub_problems(boot, running):
    """What stops the proof of the next boot: no grub.cfg, an entry that boots no kernel, a grub.cfg stale
    against what update-grub would write now."""
    if boot["source"] is None or not boot.get("grub_cfg_found", True):
        return ["there is no %s: the kernel the next boot starts cannot be proven. DGX OS boots with GRUB; run "
                "update-grub (or reinstall grub-efi-arm64) and update again" % boot["grub_cfg"]]
    if not boot["release"]:
        return ["the entry GRUB boots next (%s, chosen by %s) starts no kernel; fix GRUB_DEFAULT (or the grubenv's "
                "saved_entry/next_entry) and run update-grub" % (boot["path"], boot["by"])]
    if boot["source"] == "grub.cfg" and boot["predicted"] and boot["predicted"] != boot["release"]:
        return ["%s boots kernel %s, but update-grub would now make it boot %s: the file is stale (update-grub did "
                "not run after a kernel came or went, or after /etc/default/grub changed). Run update-grub, then "
                "update again" % (boot["grub_cfg"], boot["release"], boot["predicted"])]
    return []


def branch_of(version):
    return (version or "").split(".")[0] or None


def first_lines(text, count=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip().startswith(("E:", "W:", " "))]
    return "; ".join(lines[:count]) or (text or "").strip()[-300:]


def lift_holds(status, names):
    """dpkg's status file STATUS with the holds of NAMES lifted (the want flag of ``Status: hold ok installed``
    made ``install``), as ``apt-mark unhold`` would; (text, [names lifted, in file order])."""
    wanted, lifted, out = set(names), [], []
    for stanza in re.split(r"\n(?=\n)", status):
        found = _PACKAGE.search(stanza)
        if found and found.group(1) in wanted and _HOLD.search(stanza):
            stanza = _HOLD.sub(r"\1install ", stanza, count=1)
            lifted.append(found.group(1))
        out.append(stanza)
    return "\n".join(out), lifted


def installed_of(status, names):
    """The packages of NAMES dpkg's status file STATUS has installed (held or not), in file order."""
    wanted = set(names)
    return [found.group(1) for found, stanza in ((_PACKAGE.search(s), s) for s in re.split(r"\n(?=\n)", status))
            if found and found.group(1) in wanted and _INSTALLED.search(stanza)]


class Host(object):
    """What the plan asks the host: apt, dpkg, modinfo and files, in the C locale."""

    def __init__(self, module):
        self.module = module
        # apt's options for every simulation (the status file with the unit's holds lifted)
        self.apt_options = []
        self.lifted = []
        # the packages of release_holds installed now, held or not (the update holds every one again after it)
        self.unit_installed = []

    def lift(self, params):
        """Point apt's simulations at a copy of dpkg's status file with the holds of release_holds lifted."""
        if not params["release_holds"]:
            return
        try:
            # bytes as they are (a description in another encoding is copied untouched)
            with open(params["dpkg_status"], "rb") as handle:
                text = handle.read().decode("utf-8", "surrogateescape")
        except (IOError, OSError) as exc:
            self.module.fail_json(msg="cannot read dpkg's status file %s: %s" % (params["dpkg_status"], exc))
        self.unit_installed = installed_of(text, params["release_holds"])
        text, self.lifted = lift_holds(text, params["release_holds"])
        if self.lifted:
            path = os.path.join(self.module.tmpdir, "dpkg-status-holds-lifted")
            with open(path, "wb") as handle:
                handle.write(text.encode("utf-8", "surrogateescape"))
            self.apt_options = ["-o", "Dir::State::status=" + path]

    def simulate(self, args):
        return self.run(["apt-get", "-s", "-o", "Debug::NoLocking=1"] + self.apt_options + list(args))

    def run(self, argv, environ=None):
        rc, out, err = self.module.run_command(argv, environ_update=environ or {"LC_ALL": "C"})
        return rc, out or "", err or ""

    def installed(self, name):
        """Whether package NAME is installed, held or not."""
        return self.version(name) is not None

    def bin_path(self, name):
        return self.module.get_bin_path(name)

    def version(self, name):
        """The installed version of package NAME, or None: dpkg's own reading (plugins/module_utils/dpkg.py, as
        gb10_facts reads every package)."""
        dummy, out, dummy = self.run(dpkg.query_argv("dpkg-query", [name]))
        return dpkg.parse_dpkg_query(out)[0].get(name)

    def module_field(self, params, kernel, field):
        """One field of modinfo's answer for KERNEL's module (its first line), or None."""
        rc, out, dummy = self.run([params["modinfo"], "-k", kernel, "-F", field, params["module"]])
        return out.strip().splitlines()[0].strip() if rc == 0 and out.strip() else None

    def module_version(self, params, kernel):
        return self.module_field(params, kernel, "version")

    def module_signature(self, params, kernel):
        """Who signed KERNEL's module, as modinfo reads its appended signature (kmod's libkmod-signature.c):
        C(signer) the signing certificate's CN, C(sig_key) its serial number, C(sig_id) the signature's type (set
        for a signed module even where kmod, built without OpenSSL, cannot read the other two). None each, unsigned."""
        return dict((field, self.module_field(params, kernel, field)) for field in ("signer", "sig_key", "sig_id"))

    def install_problem(self, names):
        """Why apt could not install NAMES now (held packages, unmet dependencies, unknown), or None."""
        rc, out, err = self.simulate(["install"] + list(names))
        return None if rc == 0 else first_lines(err + "\n" + out)

    def read(self, path):
        try:
            with open(path) as handle:
                return handle.read()
        except (IOError, OSError):
            return None


def module_state(host, params, kernel, packages, userspace=None):
    """The next kernel's NVIDIA module: installed (modinfo finds it), in the upgrade, installable (apt could
    install it now, with the unit's holds lifted as for the upgrade), built by DKMS from the kernel's headers, blocked, or missing."""
    branch = params["branch"]
    name = params["module_package"].format(branch=branch, kernel=kernel)
    upgrading = dict((item["name"], item["to"]) for item in packages["install"])
    version = host.module_version(params, kernel)
    result = {"package": name, "mechanism": "package", "version": version, "install": [], "why": None}
    dkms = params["dkms_package"].format(branch=branch, kernel=kernel)
    if not version and dkms and host.installed(dkms):
        # The driver's DKMS package builds the module when the kernel is installed, from its headers.
        result.update(mechanism="dkms", package=params["headers_package"].format(branch=branch, kernel=kernel))
    planned = params["stage"] == "planned"
    if planned and (name in upgrading or (version and dkms in upgrading)):
        # Replaced in the same transaction as the user space (DGX OS's module package, or the DKMS driver rebuilding
        # it): the module installed now is not the one the reboot loads; the proof after the upgrade reads that one.
        result.update(state="in_upgrade", version=upgrading.get(name, upgrading.get(dkms)))
    elif version:
        result["state"] = "installed"
    elif not planned:
        result["state"] = "missing"
    else:
        if result["mechanism"] == "dkms":
            headers = result["package"]
            if headers in upgrading or host.installed(headers):
                result["state"] = "dkms"
            else:
                name = headers
        if result.get("state") is None:
            why = host.install_problem([name])
            if why is None:
                result.update(state="dkms" if result["mechanism"] == "dkms" else "installable", install=[name])
            else:
                result.update(state="missing" if "Unable to locate package" in why else "blocked", why=why)
    userspace = params["userspace_version"] if userspace is None else userspace
    matches = not userspace or version == userspace
    installed_ok = branch_of(version) == branch and matches
    if result["state"] == "installed":
        result["branch_ok"] = installed_ok
    else:
        result["branch_ok"] = result["state"] not in ("missing", "blocked")
    return result


def config_problems(host, params, kernel, cmdline):
    """The next kernel's build options known to break Sparks (rule kernel_updates), unless the next boot's command
    line (CMDLINE, its words) turns them off: read from <boot_dir>/config-<kernel>, once the kernel is installed."""
    config = host.read(os.path.join(params["boot_dir"], "config-" + kernel))
    if config is None:
        return []
    words = list(cmdline or [])
    found = []
    for check in params["kernel_config_checks"]:
        line = "%s=%s" % (check["option"], check["value"])
        if line in config.splitlines() and check["unless_cmdline"] not in words:
            found.append("the next boot's kernel %s is built with %s and the command line it boots with (%s) lacks "
                         "%s: %s (%s). Fix: %s"
                         % (kernel, line, " ".join(words) or "unknown", check["unless_cmdline"], check["why"],
                            ", ".join(check["sources"]), check["fix"]))
    return found


def upstream_version(version):
    """The upstream part of a Debian version: 580.142 of 580.142-0ubuntu0.24.04.1 (an epoch dropped)."""
    found = _UPSTREAM.match(version or "")
    return found.group("upstream") if found else None


def userspace_after(host, params, packages):
    """The user-space driver the next boot's module must match: the version the upgrade moves O(userspace_package)
    to (a plan), else its installed version, else O(userspace_version) (nvidia-smi's, read before the upgrade)."""
    name = params["userspace_package"].format(branch=params["branch"]) if params["userspace_package"] else ""
    if name:
        moved = dict((item["name"], item["to"]) for item in packages["install"]).get(name)
        if moved:
            return {"version": upstream_version(moved), "source": "upgrade", "package": name}
        installed = host.version(name)
        if installed:
            return {"version": upstream_version(installed), "source": "package", "package": name}
    return {"version": params["userspace_version"], "source": "parameter", "package": name or None}


def removed_modules(host, params, packages, running):
    """Installed kernels the upgrade keeps whose NVIDIA module package it removes (``Remv``)."""
    removed = set(packages["remove"])
    found = []
    for kernel in grub_boot.installed_kernels(params["boot_dir"]):
        module = params["module_package"].format(branch=params["branch"], kernel=kernel)
        if module in removed and "linux-image-" + kernel not in removed:
            found.append({"kernel": kernel, "package": module, "running": kernel == running})
    return found


def boot_problems(host, params, kernel):
    """What a reboot into KERNEL needs besides its module: its image and initrd in boot_dir, no package dpkg left
    half-installed or half-configured (dpkg --audit prints nothing), and apt's dependencies satisfied
    (apt-get check)."""
    problems = []
    missing = [name % kernel for name in ("vmlinuz-%s", "initrd.img-%s")
               if not os.path.isfile(os.path.join(params["boot_dir"], name % kernel))]
    if missing:
        problems.append("the next boot's kernel %s lacks %s in %s: the boot would fail. Fix: reinstall "
                        "linux-image-%s (update-initramfs -c -k %s for the initrd)"
                        % (kernel, " and ".join(missing), params["boot_dir"], kernel, kernel))
    rc, out, err = host.run(["dpkg", "--audit"])
    if rc != 0 or out.strip():
        problems.append("dpkg --audit reports packages left unpacked or half-configured: %s. Fix: dpkg --configure "
                        "-a, then apt-get -f install, before any reboot" % first_lines(err + "\n" + out))
    rc, out, err = host.run(["apt-get", "check"])
    if rc != 0:
        problems.append("apt-get check finds broken dependencies: %s. Fix: apt-get -f install before any reboot"
                        % first_lines(err + "\n" + out))
    return problems


def secure_boot(params):
    """Secure Boot as the kernel reads it (drivers/firmware/efi/libstub/secureboot.c): the EFI global variable
    SecureBoot, in efivarfs the file <efivars>/<secure_boot_efivar> of 4 attribute bytes then the data byte (1 on,
    0 off). No efivars directory: not booted by UEFI, or efivarfs not mounted (unknown); no variable: firmware
    without Secure Boot, which the kernel takes as off. Unknown is judged as off."""
    directory = params["efivars"]
    path = os.path.join(directory, params["secure_boot_efivar"])
    if not os.path.isdir(directory):
        return {"state": "unknown", "source": "no %s (not booted by UEFI, or efivarfs not mounted)" % directory}
    if not os.path.exists(path):
        return {"state": "off", "source": "no %s (firmware without Secure Boot)" % path}
    try:
        with open(path, "rb") as handle:
            data = bytearray(handle.read())
    except (IOError, OSError) as exc:
        return {"state": "unknown", "source": "%s unreadable (%s)" % (path, exc), "warn": True}
    if len(data) != 5 or data[4] not in (0, 1):
        return {"state": "unknown", "source": "%s holds %s, not 4 attribute bytes and 0 or 1"
                % (path, " ".join("%02x" % b for b in data[:8]) or "nothing"), "warn": True}
    return {"state": "on" if data[4] == 1 else "off", "source": path}


def certificate_serial(data):
    """The serial number of a DER X.509 certificate as modinfo prints a module's sig_key (its bytes in upper-case
    hex, colon-separated, leading zero bytes dropped), or None where DATA is no certificate."""
    def item(pos):
        tag, size, pos = data[pos], data[pos + 1], pos + 2
        if size & 0x80:
            count = size & 0x7F
            size, pos = int.from_bytes(bytes(data[pos:pos + count]), "big"), pos + count
        return tag, pos, pos + size

    try:
        tag, start, dummy = item(0)  # Certificate
        if tag != 0x30:
            return None
        tag, start, dummy = item(start)  # tbsCertificate
        tag, start, end = item(start)
        if tag == 0xA0:  # [0] version, then the serial number
            tag, start, end = item(end)
        if tag != 0x02 or end > len(data):
            return None
    except IndexError:
        return None
    serial = bytes(data[start:end]).lstrip(b"\x00") or b"\x00"
    return ":".join("%02X" % b for b in bytearray(serial))


def mok_enrolment(host, params):
    """Whether the MOK certificate (O(mok_certificate)) is enrolled, as C(mokutil --test-key) says it (lcp/mokutil
    src/mokutil.c test_key): C(enrolled) yes ('is already enrolled'), no ('is not enrolled'), pending ('is already in
    the enrollment request': enrolled at the next boot's MOK manager, by a person at the console), no_mokutil,
    no_certificate, or unknown (any other answer: 'is already in db', 'is blocked in dbx', an error). The words are
    read, not the exit status, whose meaning mokutil reversed after 0.7.2."""
    cert = params["mok_certificate"]
    found = {"certificate": cert, "enrolled": "unknown", "answer": None}
    program = host.bin_path(params["mokutil"])
    if not program:
        found["enrolled"] = "no_mokutil"
    elif not os.path.isfile(cert):
        found["enrolled"] = "no_certificate"
    else:
        rc, out, err = host.run([program, "--test-key", cert])
        lines = [line.strip() for line in (out + "\n" + err).splitlines() if line.strip()]
        found["answer"] = "; ".join(lines) or "nothing (rc %s)" % rc
        for line in lines:
            for words, state in ((" is already enrolled", "yes"), (" is not enrolled", "no"),
                                 (" is already in the enrollment request", "pending")):
                if line.endswith(words):
                    found["enrolled"] = state
    return found


def _mok_problem(mok, what, kernel):
    """The problem of a module whose key must be an enrolled MOK, from mok_enrolment's answer MOK; None when it is
    enrolled. WHAT says which module and key."""
    precompiled = "or use the precompiled, signed module (nvidia_driver_kernel_module: precompiled)"
    enrol = ("mokutil --import %s and confirm the enrolment at the next boot's MOK manager (a person at the console), "
             "then update again" % mok["certificate"])
    state = mok["enrolled"]
    if state == "yes":
        return None
    if state == "no":
        why, fix = "mokutil --test-key says it is not enrolled", enrol
    elif state == "pending":
        why = "mokutil --test-key says it is only in the enrollment request (enrolled at the next boot's MOK manager)"
        fix = "confirm the enrolment at the MOK manager, which an unattended reboot passes by, then update again"
    elif state == "no_mokutil":
        why = "mokutil is not installed, so its enrolment cannot be checked"
        fix = "install mokutil (apt-get install mokutil) and update again"
    elif state == "no_certificate":
        why = "there is no certificate %s to check it with" % mok["certificate"]
        fix = ("create the MOK (update-secureboot-policy --new-key), rebuild the module (dkms autoinstall -k %s) and "
               "%s, or set os_update_mok_certificate to the certificate that signs it" % (kernel, enrol))
    else:
        why = "mokutil --test-key answers '%s', not that it is already enrolled" % mok["answer"]
        fix = "sign the module with an enrolled MOK (%s)" % enrol
    return ("Secure Boot is on and %s, a key the kernel trusts only once it is an enrolled MOK, but %s: the kernel "
            "would refuse the module and after the reboot this host has no GPU. Fix: %s; %s" % (what, why, fix, precompiled))


def signature_check(host, params, kernel, nvidia, packages, boot_security):
    """How the next kernel's NVIDIA module is signed (C(signed_by)) and, with Secure Boot on, whether the kernel
    would load it: ({signer, sig_key, signed_by, mok}, [problems]). An installed module is read with modinfo:
    C(trusted) signed by a key the kernel trusts by itself (O(trusted_signers)), C(other) by another key (a MOK,
    which must be enrolled), C(unsigned), C(unnamed) (signed, the signer unreadable). In a plan, a module not
    installed yet is C(archive) (the distribution's signed package, in the upgrade or installable) or C(dkms)
    (built by the DKMS driver and signed with the MOK, whose enrolment is checked before anything changes)."""
    report = {"signer": None, "sig_key": None, "signed_by": None, "mok": None}
    module_name = params["module_package"].format(branch=params["branch"], kernel=kernel)
    upgrading = set(item["name"] for item in packages["install"])
    state = nvidia["state"]
    if state == "installed":
        found = host.module_signature(params, kernel)
        report.update(signer=found["signer"], sig_key=found["sig_key"])
        if not (found["signer"] or found["sig_key"] or found["sig_id"]):
            report["signed_by"] = "unsigned"
        elif found["signer"] in params["trusted_signers"]:
            report["signed_by"] = "trusted"
        else:
            report["signed_by"] = "other" if found["signer"] else "unnamed"
    elif state == "installable" or (state == "in_upgrade" and module_name in upgrading):
        report["signed_by"] = "archive"
    elif state in ("dkms", "in_upgrade"):
        report["signed_by"] = "dkms"
    if boot_security["state"] != "on" or report["signed_by"] in (None, "trusted", "archive"):
        return report, []
    modinfo = "modinfo -k %s -F signer %s" % (kernel, params["module"])
    if report["signed_by"] == "unsigned":
        return report, [
            "Secure Boot is on and the NVIDIA module of the next boot's kernel %s is not signed (%s answers nothing): "
            "the kernel refuses to load it and after the reboot this host has no GPU. Fix: use the precompiled, "
            "signed module (nvidia_driver_kernel_module: precompiled; package %s), or have DKMS sign it with the "
            "MOK (%s) and enrol that (mokutil --import, confirmed at the next boot's MOK manager)"
            % (kernel, modinfo, module_name, params["mok_certificate"])]
    if report["signed_by"] == "unnamed":
        return report, [
            "Secure Boot is on and the NVIDIA module of the next boot's kernel %s is signed, but %s names no signer "
            "(modinfo's kmod cannot read the signature): whether the kernel trusts its key cannot be proven. Fix: "
            "read it with a modinfo that can (kmod built with OpenSSL), or use the precompiled, signed module "
            "(nvidia_driver_kernel_module: precompiled)" % (kernel, modinfo)]
    mok = report["mok"] = mok_enrolment(host, params)
    if report["signed_by"] == "dkms":
        what = ("the DKMS driver builds the NVIDIA module of the next boot's kernel %s and signs it with the key of %s"
                % (kernel, mok["certificate"]))
        return report, [p for p in [_mok_problem(mok, what, kernel)] if p]
    what = "the NVIDIA module of the next boot's kernel %s is signed by '%s'" % (kernel, report["signer"])
    cert = None
    if os.path.isfile(mok["certificate"]):
        with open(mok["certificate"], "rb") as handle:
            cert = certificate_serial(bytearray(handle.read()))
    if cert and report["sig_key"] and report["sig_key"].upper() != cert:
        return report, [
            "Secure Boot is on and %s (sig_key %s), not with the MOK certificate %s (serial %s): that key's "
            "enrolment cannot be checked, and the kernel refuses the module unless it is enrolled. Fix: set "
            "os_update_mok_certificate to the certificate that signed it and enrol that (mokutil --import, confirmed "
            "at the next boot's MOK manager), rebuild the module with the MOK (dkms autoinstall -k %s), or use the "
            "precompiled, signed module (nvidia_driver_kernel_module: precompiled)"
            % (what, report["sig_key"], mok["certificate"], cert, kernel)]
    return report, [p for p in [_mok_problem(mok, what, kernel)] if p]


def judge(plan, params):
    """Fill problems and warnings of a plan; return it."""
    problems, warnings = [], []
    kernel, branch, module = plan["next_kernel"], params["branch"], plan["nvidia_module"]
    userspace = (plan.get("userspace") or {}).get("version") or params["userspace_version"]
    if module["state"] == "missing" and params["stage"] == "installed":
        if module["mechanism"] == "package":
            fix = "install %s for it" % module["package"]
        else:
            fix = "install %s and rebuild it (dkms autoinstall -k %s; its log says why it failed)" % (
                module["package"], kernel)
        problems.append(
            "the next boot's kernel %s has no NVIDIA module (modinfo -k %s finds none): after a reboot this host "
            "has no GPU. Fix: %s, or remove linux-image-%s so that the next boot keeps %s"
            % (kernel, kernel, fix, kernel, plan["running_kernel"]))
    elif module["state"] == "missing":
        needs = ("its NVIDIA module package %s" % module["package"] if module["mechanism"] == "package" else
                 "the headers the DKMS driver builds its NVIDIA module from, %s," % module["package"])
        problems.append(
            "the next boot's kernel %s has no NVIDIA module: %s is not installed, not in the upgrade, not in the "
            "configured sources. After the reboot this host would have no GPU. Wait until the package is published "
            "(DGX OS phases them), or keep the running kernel %s (apt-mark hold the kernel metapackage)"
            % (kernel, needs, plan["running_kernel"]))
    elif module["state"] == "blocked":
        problems.append(
            "the next boot's kernel %s needs %s, which apt cannot install now: %s. Fix what holds it (the driver "
            "stays on branch %s), or keep the running kernel %s" % (kernel, module["package"], module["why"], branch,
                                                                    plan["running_kernel"]))
    elif not module["branch_ok"]:
        problems.append(
            "the next boot's kernel %s has NVIDIA module %s, not the user-space driver's %s of branch %s (rules "
            "driver_branch, driver_reboot_pending): install %s matching it before rebooting"
            % (kernel, module["version"], userspace or branch + ".*", branch, module["package"]))
    for item in plan["packages"]["install"]:
        moved = [b for b in params["forbidden_branches"]
                 if "nvidia" in item["name"] and (branch_of(item["to"]) == b or "-%s-" % b in item["name"] + "-")]
        if moved:
            problems.append(
                "the upgrade installs %s %s, of forbidden branch %s (rule driver_branch keeps %s): the pin of "
                "sparkfleet.gb10.nvidia_driver is missing or outranked; run site.yml (tags nvidia_driver) first"
                % (item["name"], item["to"], moved[0], branch))
    for item in plan.get("modules_removed") or []:
        warnings.append(
            "the upgrade removes %s: kernel %s%s stays installed without its NVIDIA module, and a boot into it (a "
            "fallback from the GRUB menu) has no GPU" % (item["package"], item["kernel"],
                                                         " (the running one)" if item["running"] else ""))
    problems.extend(plan.pop("_boot_problems", []))
    problems.extend(plan.pop("_config_problems", []))
    problems.extend(plan.pop("_firmware_problems", []))
    problems.extend(plan.pop("_signature_problems", []))
    boot_security = plan.get("secure_boot") or {}
    if boot_security.pop("warn", False):
        warnings.append("the Secure Boot state is unknown (%s): judged as off, so a module the kernel would refuse "
                        "is not caught" % boot_security.get("source"))
    bad = plan["known_bad"]
    if bad:
        line = "the next boot's kernel %s is known bad on Sparks: %s (%s). Fix: %s" % (
            kernel, bad.get("why"), ", ".join(bad.get("sources") or []), bad.get("fix"))
        if params["accept_kernel_reason"]:
            warnings.append("%s. Accepted on this host: %s" % (line, params["accept_kernel_reason"]))
        else:
            problems.append(line + "; or, to accept it, set os_update_accept_kernel_reason with why")
    plan["problems"], plan["warnings_list"], plan["safe"] = problems, warnings, not problems
    return plan


def firmware_updates(host, params):
    """([updates fwupd offers], problem or None): fwupd's metadata refreshed, then its offer."""
    program = host.bin_path(params["fwupdmgr"])
    if not program:
        return [], ("firmware updates are on (os_update_firmware) but %s is not installed: install fwupd, or turn "
                    "them off" % params["fwupdmgr"])
    try:
        fwupd.check_refresh(*host.run(fwupd.refresh_argv(program), fwupd.ENVIRON))
        offer = fwupd.parse_updates(*host.run(fwupd.get_updates_argv(program), fwupd.ENVIRON))
        return [dict(item, line=fwupd.describe(item), argv=fwupd.update_argv(item["device_id"], program))
                for item in offer], None
    except fwupd.FwupdError as exc:
        return [], ("fwupd cannot say which firmware updates it offers (%s). Fix fwupd (its remotes: fwupdmgr "
                    "get-remotes), or turn firmware updates off (os_update_firmware)" % exc)


def run(module):
    params = module.params
    host = Host(module)
    running = (host.read(params["proc_osrelease"]) or "").strip()
    if not running:
        module.fail_json(msg="cannot read the running kernel from %s" % params["proc_osrelease"])
    packages = {"install": [], "remove": [], "kept_back": []}
    if params["stage"] == "planned":
        host.lift(params)
        rc, out, err = host.simulate(["dist-upgrade"])
        if rc != 0:
            module.fail_json(msg="apt-get -s dist-upgrade failed (rc %s): %s" % (rc, first_lines(err + "\n" + out)))
        packages = parse_simulation(out)
    # A kernel the upgrade installs anew (not one it re-installs at another version).
    images = [_KERNEL_IMAGE.match(item["name"]) for item in packages["install"] if item["from"] is None]
    new = grub_boot.version_sort(found.group("release") for found in images if found)
    boot = next_boot(params, running, new, packages["remove"], params["stage"] == "planned")
    kernel = boot["release"] or running
    userspace = userspace_after(host, params, packages)
    nvidia = module_state(host, params, kernel, packages, userspace["version"])
    bad = next((dict(item) for item in params["known_bad_kernels"] if item.get("release") == kernel), None)
    fallback = fallback_problems(params, kernel, running, boot) if params["stage"] == "installed" else ([], None)
    boot_security = secure_boot(params)
    signature, signature_problems = signature_check(host, params, kernel, nvidia, packages, boot_security)
    firmware, firmware_problem = [], None
    if params["firmware"] and params["stage"] == "planned":
        firmware, firmware_problem = firmware_updates(host, params)
    plan = {"running_kernel": running, "next_kernel": kernel, "new_kernels": new, "packages": packages,
            "nvidia_module": dict((k, v) for k, v in nvidia.items() if k != "install"), "known_bad": bad,
            "install": nvidia["install"], "firmware": firmware, "userspace": userspace,
            # the state apt simulated: every hold of the unit lifted, whenever the upgrade or the module's install
            # changes anything (the held user space a phased module needs included); nothing to do, nothing lifted
            "holds_lifted": list(host.lifted) if packages["install"] or packages["remove"] or nvidia["install"] else [],
            # every installed package of the unit, held again after the upgrade whatever its outcome: a run that lost
            # its host after lifting the holds left them lifted, and this run holds them again
            "unit_installed": list(host.unit_installed),
            "modules_removed": removed_modules(host, params, packages, running),
            "next_boot": boot,
            "_boot_problems": (grub_problems(boot, running) + boot_problems(host, params, kernel) + fallback[0]
                               if params["stage"] == "installed" else grub_problems(boot, running)),
            "fallback": fallback[1],
            "_config_problems": config_problems(host, params, kernel, boot["cmdline"]),
            "_firmware_problems": [firmware_problem] if firmware_problem else [],
            "secure_boot": dict(boot_security, **signature), "_signature_problems": signature_problems}
    return judge(plan, params)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            stage=dict(type="str", choices=["planned", "installed"], default="planned"),
            branch=dict(type="str", required=True),
            module_package=dict(type="str", required=True),
            dkms_package=dict(type="str", default=""),
            headers_package=dict(type="str", default="linux-headers-{kernel}"),
            userspace_version=dict(type="str", default=""),
            userspace_package=dict(type="str", default=""),
            kernel_config_checks=dict(type="list", elements="dict", default=[]),
            grub_dir=dict(type="path", default=""),
            etc_default=dict(type="path", default="/etc/default"),
            forbidden_branches=dict(type="list", elements="str", default=[]),
            known_bad_kernels=dict(type="list", elements="dict", default=[]),
            accept_kernel_reason=dict(type="str", default=""),
            boot_dir=dict(type="path", default="/boot"),
            proc_osrelease=dict(type="path", default="/proc/sys/kernel/osrelease"),
            modinfo=dict(type="str", default="modinfo"),
            module=dict(type="str", default="nvidia"),
            firmware=dict(type="bool", default=False),
            fwupdmgr=dict(type="str", default="fwupdmgr"),
            release_holds=dict(type="list", elements="str", default=[]),
            next_boot=dict(type="str", choices=["grub", "newest"], default="grub"),
            fallback=dict(type="str", default=""),
            dpkg_status=dict(type="path", default="/var/lib/dpkg/status"),
            efivars=dict(type="path", default="/sys/firmware/efi/efivars"),
            secure_boot_efivar=dict(type="str", default=rulebook.setting("secure_boot_efivar")),
            trusted_signers=dict(type="list", elements="str",
                                 default=[item["signer"] for item in rulebook.setting("module_trusted_signers")]),
            mok_certificate=dict(type="path", default=rulebook.setting("mok_certificate")),
            mokutil=dict(type="str", default="mokutil"),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, **run(module))


if __name__ == "__main__":
    main()
