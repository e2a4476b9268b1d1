"""The ``os-update`` fault of ``make chaos`` (tools/chaos.py): ``playbooks/os_update.yml`` rolls a kernel update
through both hosts of a fleet of independent hosts (``inventories/sim-independent``: spark-1 serves tiny-a, spark-2
tiny-b), one host at a time, while a bounded load generator on the other host sends completions to its model.

The update is the stand-ins' (tests/sim/standins/build-localrepo.sh DIR kernels): kernel 6.17.0-1016-nvidia, its
precompiled NVIDIA module and the 580 user space 580.159.03 moving as one, as DGX OS moves them, their holds lifted by
the update for the upgrade and set again. Each host's apt reads only the stand-in repositories during the fault (its
Debian sources are set aside, the driver stand-in's stays, pinned and held). A
reboot is ``docker restart`` (tests/sim/tasks/reboot.yml); at boot the kernel stand-in makes the kernel of GRUB's
default entry
the running one, and the fabric port is named as udev names a Spark's.

Passes when, for each host in turn: the playbook succeeds (its own gates: the proven kernel booted with the module
of the branch, the endpoints answer, the host's verify gates); the host runs 6.17.0-1016-nvidia and its vLLM was
started again (new MainPID); the other host's load saw zero failed requests over a span that covers the whole
update, and its vLLM kept its MainPID with no restart. The time is both updates'. Each host is then put back on the
kernel it started with (a harness reset, not an update), its apt sources restored, and the fleet put back to
``inventories/sim``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "module_utils"))
import rulebook  # noqa: E402  pure Python: the unit sparkfleet.gb10.nvidia_driver holds (rule kernel_updates)

BASE_KERNEL, NEW_KERNEL = "6.17.0-1014-nvidia", "6.17.0-1016-nvidia"
SIM = "/opt/sparkfleet-sim"
REPOS = "/srv/kernelrepo"
SOURCE = "/etc/apt/sources.list.d/sparkfleet-chaos-kernel.list"
SET_ASIDE = "/etc/apt/sources.list.chaos-os-update"
BOOT_STANDIN = ("sparkfleet-sim-boot-kernel", "/usr/local/sbin", "0755")
BOOT_UNIT = ("sparkfleet-sim-boot-kernel.service", "/etc/systemd/system", "0644")
APT = "DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Options::=--force-confold"
# What the hosts run before the update: the stand-ins' base kernel repository and the driver stand-ins' 580.142.
BASE_DRIVER = "580.142"
# what the stand-ins' update moves the user space to (tests/sim/standins/build-localrepo.sh, DRIVER)
NEW_DRIVER = "580.159.03"
BASE_UNIT = (("linux-nvidia-hwe-24.04", "6.17.0-1014.14"), ("linux-image-nvidia-hwe-24.04", "6.17.0-1014.14"),
             ("linux-headers-nvidia-hwe-24.04", "6.17.0-1014.14"),
             ("linux-modules-nvidia-580-open-nvidia-hwe-24.04", "6.17.0-1014.14+1"),
             ("nvidia-driver-580-open", "580.142-0ubuntu1"), ("libnvidia-compute-580", "580.142-0ubuntu1"),
             ("nvidia-utils-580", "580.142-0ubuntu1"), ("nvidia-kernel-common-580", "580.142-0ubuntu1"),
             ("nvidia-kernel-source-580-open", "580.142-0ubuntu1"))
# the unit sparkfleet.gb10.nvidia_driver holds
HELD = rulebook.driver_unit(rulebook.setting("driver_branch"))["held"]


def source(repo):
    return "echo 'deb [trusted=yes] file:%s/%s ./' > %s && apt-get -q update >/dev/null" % (REPOS, repo, SOURCE)


def prepare(c, host):
    """The stand-in repositories and the boot stand-in on HOST, apt on the stand-ins only, the base kernel
    installed and running, then the update published."""
    standins = os.path.join(c.repo, "tests", "sim", "standins")
    for name, dest, mode in (("build-localrepo.sh", "/usr/local/sbin", "0755"), BOOT_STANDIN, BOOT_UNIT):
        subprocess.run(["docker", "cp", os.path.join(standins, name), "%s:%s/%s" % (host, dest, name)], check=True,
                       capture_output=True)
        c.sh(host, "chmod %s %s/%s" % (mode, dest, name), check=True)
    c.name_fabric_port_at_boot(host)
    c.sh(host, "systemctl daemon-reload && systemctl enable %s >/dev/null 2>&1" % BOOT_UNIT[0], check=True)
    c.sh(host, "test -f %s/base/Release || /usr/local/sbin/build-localrepo.sh %s kernels" % (REPOS, REPOS), check=True)
    # grub-editenv (package grub-common, on every Spark): os_update_boot_once makes the running kernel GRUB's saved
    # entry and boots the new one once; installed from Debian before apt is kept to the stand-ins
    c.sh(host, "command -v grub-editenv >/dev/null || { apt-get -q update >/dev/null && %s install "
               "--no-install-recommends grub-common >/dev/null; }" % APT, check=True, timeout=600)
    c.sh(host, "if [ -f /etc/apt/sources.list ]; then mv /etc/apt/sources.list %s; fi" % SET_ASIDE, check=True)
    # The base unit as packages and as the running one (a rerun of the fault starts where the last one began):
    # kernel 6.17.0-1014-nvidia's metapackages, its module's and driver 580.142, held as nvidia_driver holds them.
    c.sh(host, "%s && %s install --allow-downgrades --allow-change-held-packages %s >/dev/null && "
               "%s purge --allow-change-held-packages linux-image-%s linux-headers-%s linux-modules-nvidia-580-open-%s "
               ">/dev/null 2>&1; apt-mark hold %s >/dev/null && "
               "sed -i 's/^driver_version=.*/driver_version=%s/' %s/bin/nvidia-smi.fields && "
               "sed -i 's/NVIDIA-SMI [0-9.]*/NVIDIA-SMI %s/; s/Driver Version: [0-9.]*/Driver Version: %s/' "
               "%s/bin/nvidia-smi.txt && /usr/local/sbin/sparkfleet-sim-boot-kernel"
               % (source("base"), APT, " ".join("%s=%s" % item for item in BASE_UNIT), APT, NEW_KERNEL, NEW_KERNEL,
                  NEW_KERNEL, " ".join(name for name, dummy in BASE_UNIT if name in HELD), BASE_DRIVER, SIM,
                  BASE_DRIVER, BASE_DRIVER, SIM),
         check=True, timeout=300)
    running = c.sh(host, "cat %s/proc/sys/kernel/osrelease" % SIM, check=True).stdout.strip()
    if running != BASE_KERNEL:
        raise SystemExit("chaos: os-update: %s runs %s after the reset, not %s" % (host, running, BASE_KERNEL))
    c.sh(host, source("good"), check=True)


def restore(c, host):
    c.sh(host, "rm -f %s; if [ -f %s ]; then mv %s /etc/apt/sources.list; fi; apt-get -q update >/dev/null"
         % (SOURCE, SET_ASIDE, SET_ASIDE), check=True, timeout=300)


def start_load(c, host, key):
    c.sh(host, "rm -f %s" % c.load_stop, check=True)
    load = subprocess.Popen(["docker", "exec", "-i", "-e", "SPARKFLEET_KEY", host, "python3", "-", c.models[host],
                             c.load_stop, str(c.load_pause)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, SPARKFLEET_KEY=key))
    load.stdin.write(c.load)
    load.stdin.close()
    return load


def stop_load(c, host, load):
    c.sh(host, "touch %s" % c.load_stop, check=True)
    out, err = load.stdout.read(), load.stderr.read()  # the load prints once, at its end
    load.wait(timeout=300)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": 0, "failed": -1, "errors": [err.strip()[-300:]], "first_start": None, "last_end": None}


def update_one(c, target, other, problems):
    """os_update.yml --limit TARGET while OTHER serves a bounded load. Returns (seconds or None, detail)."""
    units = dict((host, "%s%s.service" % (c.unit_prefix, model)) for host, model in c.models.items())
    key = c.controller_key(c.independent, other, c.models[other])
    before = dict((host, c.show(host, units[host], "MainPID", "NRestarts")) for host in (target, other))
    load = start_load(c, other, key)
    time.sleep(10)  # a few requests answered before the update starts
    start = time.time()
    rc, seconds = c.playbook("os-update-" + target, "playbooks/os_update.yml", "-i", c.independent, "--limit", target)
    end = time.time()
    time.sleep(10)
    seen = stop_load(c, other, load)
    after = dict((host, c.show(host, units[host], "MainPID", "NRestarts")) for host in (target, other))
    kernel = c.sh(target, "cat %s/proc/sys/kernel/osrelease" % SIM).stdout.strip()
    if rc != 0:
        problems.append("os-update: os_update.yml --limit %s failed (rc %d, build/chaos/os-update-%s.log)"
                        % (target, rc, target))
    if kernel != NEW_KERNEL:
        problems.append("os-update: %s runs %s after its update, not %s" % (target, kernel, NEW_KERNEL))
    if seen["failed"] != 0 or seen["ok"] < 3:
        problems.append("os-update: load on %s during %s's update: %s ok, %s failed: %s"
                        % (other, target, seen["ok"], seen["failed"], seen["errors"]))
    if not (seen["first_start"] and seen["first_start"] < start and (seen["last_end"] or 0) > end):
        problems.append("os-update: the load on %s did not span %s's update (%s .. %s vs %.0f .. %.0f)"
                        % (other, target, seen["first_start"], seen["last_end"], start, end))
    if after[other] != before[other]:
        problems.append("os-update: %s on %s was restarted during %s's update (%s -> %s)"
                        % (units[other], other, target, before[other], after[other]))
    if after[target]["MainPID"] in ("0", before[target]["MainPID"]):
        problems.append("os-update: %s on %s was not started again by the reboot (MainPID %s -> %s)"
                        % (units[target], target, before[target]["MainPID"], after[target]["MainPID"]))
    detail = ("%s: %s -> %s in %.0f s (reboot included) while %s's %s took one request at a time (%.0f s apart): "
              "%d answered, %d failed, slowest %.1f s, its vLLM kept MainPID %s"
              % (target, BASE_KERNEL, kernel, seconds, other, c.models[other], c.load_pause, seen["ok"],
                 seen["failed"], seen.get("slowest_s", 0.0), after[other]["MainPID"]))
    return (seconds if rc == 0 else None), detail


def fault_os_update(c, problems):
    """Both hosts of inventories/sim-independent updated in turn; see the module's doc."""
    rc, seconds = c.playbook("os-update-independent", "site.yml", "-i", c.independent)
    if rc != 0:
        problems.append("os-update: site.yml on inventories/sim-independent failed (rc %d, build/chaos/"
                        "os-update-independent.log)" % rc)
        return None, "the independent layout did not converge"
    details, total, failed = [], 0.0, False
    try:
        for host in (c.follower, c.head):
            prepare(c, host)
        for target, other in ((c.follower, c.head), (c.head, c.follower)):
            seconds, detail = update_one(c, target, other, problems)
            details.append(detail)
            failed = failed or seconds is None
            total += seconds or 0.0
    finally:
        for host in (c.follower, c.head):
            restore(c, host)
    detail = ("inventories/sim-independent; playbooks/os_update.yml --limit each host in turn, kernel %s published "
              "with its module and the 580 user space %s (DGX OS's unit, held between rolls): %s"
              % (NEW_KERNEL, NEW_DRIVER, "; ".join(details)))
    rc_back, back_s = c.playbook("demo-restore", "site.yml", "-i", c.demo_inventory)
    if rc_back != 0:
        problems.append("os-update: putting back inventories/sim failed (rc %d, build/chaos/demo-restore.log)" % rc_back)
    else:
        detail += "; then inventories/sim put back in %.0f s" % back_s
    return (None if failed else total), detail
