# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The checks of each role's own settings (timeouts, paths, choices, pins), written once.

Two callers judge the same settings with these functions:

- preflight (``fleet_preflight.check_role_settings``), over every host of the inventory before anything changes:
  each variable is the inventory's value where it sets one, else the role's default (``defaults/main.yml``); a
  value preflight cannot know (a template) leaves the checks that need it to the role;
- the role itself, at the start of its run (lookup ``sparkfleet.gb10.setting_problems``), with every variable
  templated as the role will use it: so a role run on its own refuses exactly what preflight refuses.

Each check reads some variables of one role and returns ``Problem``s naming the variable, its value, what is wrong
and the fix. ``tests/unit/plugins/module_utils/test_role_settings.py`` gives each check a value it refuses and
proves preflight refuses that value too; ``tests/unit/roles/test_refusals.py`` proves every refusal of a role is
one of these, a preflight check, or a check of what an earlier stage made.
"""

from __future__ import annotations

import collections
import difflib
import ipaddress
import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan, ray_args, redaction, rulebook, venv_lock
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    MAXIMUM, MINIMUM, SECRET_SHOWN, SECRET_VALUE, is_secret)

Problem = collections.namedtuple("Problem", "variable value problem fix")
PORT_RANGE = (MINIMUM["port"], MAXIMUM["port"])

CHECKS = collections.OrderedDict()


class _Unknown(object):
    def __repr__(self):
        return "UNKNOWN"


# A value preflight cannot know before the run: a template, or a variable neither the inventory nor the role's
# defaults set.
UNKNOWN = _Unknown()


def check(role, *variables, **kwargs):
    """Register a check of ``role`` over ``variables`` (called with their values, in that order). Those named in
    ``optional`` may be unset or unknown (the check gets None); the others must be known for the check to run."""
    optional = frozenset(kwargs.get("optional", ()))

    def register(function):
        CHECKS.setdefault(role, []).append((variables, optional, function))
        return function
    return register


def check_each(judge, *targets):
    """Register ``judge(variable, value, *args)`` as the check of each ``(role, variable, *args)`` in ``targets``:
    one judgement of a kind of setting, written once, for every variable of that kind (the check is named after
    its variable)."""
    for role, variable, args in ((t[0], t[1], tuple(t[2:])) for t in targets):
        def function(value, _variable=variable, _args=args):
            return judge(_variable, value, *_args)
        function.__name__ = "_" + variable
        check(role, variable)(function)


def variables(role):
    """Every variable the checks of ``role`` read, sorted."""
    return sorted(set(name for names, _optional, _function in CHECKS.get(role, ()) for name in names))


def roles():
    return list(CHECKS)


def known(value):
    """Whether preflight can judge ``value``: not UNKNOWN and holding no template, however deep."""
    if value is UNKNOWN:
        return False
    if isinstance(value, str):
        # "<cannot template: ...>": preflight's reading of a value Ansible could not template (an undefined name)
        return "{{" not in value and "{%" not in value and not value.startswith("<cannot template")
    if isinstance(value, dict):
        return all(known(key) and known(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return all(known(item) for item in value)
    return True


def problems(role, settings):
    """Every ``Problem`` of ``role``'s settings (``{variable: value}``). A check runs only when every variable it
    reads is known."""
    found = []
    for names, optional, function in CHECKS.get(role, ()):
        values = [settings.get(name, UNKNOWN) for name in names]
        # An optional variable preflight cannot know counts as unset: the check then takes its own default (the
        # rule book's, which is what the role's default template reads).
        values = [None if name in optional and not known(value) else value for name, value in zip(names, values)]
        if all(known(value) for value in values):
            found.extend(function(*values))
    return found


def message(host, problem, settings=None):
    """One line, as preflight prints its findings: ``host: variable=value: problem. Fix: fix``, with every secret of
    ``settings`` (the values judged) and every secret its shapes show hidden (plugins/module_utils/redaction.py)."""
    secrets = redaction.secret_values(settings or {})
    return redaction.redact_text("%s: %s=%r: %s. Fix: %s" % (
        host, problem.variable, redaction.redact(problem.value, secrets), problem.problem, problem.fix), secrets)


def _int(value):
    """An integer from an int or its digits as text; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _absolute(variable, value, what="an absolute path on the host"):
    if isinstance(value, str) and value.startswith("/"):
        return []
    return [Problem(variable, value, "must be %s" % what, "write the absolute path, e.g. the role's default")]


def _one_of(variable, value, choices, fix):
    if value in choices:
        return []
    return [Problem(variable, value, "must be %s" % " or ".join(choices), fix)]


def _on(value):
    """A boolean setting as Ansible reads it (yes/no/true/false/on/off/1/0, as text or not)."""
    return boolean(value, strict=False)


def _timeout_pair(short, short_value, long, long_value):
    """``short`` must leave at least 10 s before ``long`` (a confirmation before its automatic revert)."""
    low, high = _int(short_value), _int(long_value)
    if low is None or high is None or low + 10 <= high:
        return []
    return [Problem(short, short_value, "not at least 10 s below %s (%s): the host could revert while the "
                    "controller is still confirming" % (long, long_value),
                    "raise %s or lower %s" % (long, short))]


# ------------------------------------------------------------------ qsfp_network

@check("qsfp_network", "qsfp_network_interfaces")
def _qsfp_interfaces(interfaces):
    pattern = rulebook.setting("qsfp_netdev_pattern")
    if not isinstance(interfaces, list) or not interfaces:
        return [Problem("qsfp_network_interfaces", interfaces, "must be a non-empty list of QSFP netdevs",
                        "leave it unset (both halves of the cabled port, rule qsfp_both_halves)")]
    names = [item.get("name") if isinstance(item, dict) else item for item in interfaces]
    found = []
    bad = [name for name in names if not isinstance(name, str) or not re.match(pattern, name)]
    if bad:
        found.append(Problem("qsfp_network_interfaces", names, "%s is no QSFP netdev name (rule book "
                             "qsfp_netdev_pattern %s)" % (", ".join(str(n) for n in bad), pattern),
                             "name the ConnectX-7 netdevs, e.g. enp1s0f1np1 and enP2p1s0f1np1"))
    if len(set(str(n) for n in names)) != len(names):
        found.append(Problem("qsfp_network_interfaces", names, "names an interface twice",
                             "list each netdev once"))
    return found


@check("qsfp_network", "qsfp_network_mtu")
def _qsfp_mtu(mtu):
    wanted = rulebook.setting("fabric_mtu")
    number = _int(mtu)
    if number is not None and number != wanted:
        return [Problem("qsfp_network_mtu", mtu, "the fabric must carry %s-byte frames (rule fabric_mtu): below "
                        "it, NCCL and the jumbo don't-fragment pings fail" % wanted,
                        "remove qsfp_network_mtu (the default is %s), and set the switch ports, if any, to %s"
                        % (wanted, wanted))]
    return []


@check("qsfp_network", "qsfp_network_mtu", "qsfp_network_ping_payload")
def _qsfp_payload(mtu, payload):
    number, size = _int(mtu), _int(payload)
    if number is not None and size is not None and size + 28 > number:
        return [Problem("qsfp_network_ping_payload", payload, "with 28 bytes of IPv4 and ICMP headers it does not "
                        "fit one %s-byte frame, so a don't-fragment ping could never pass" % number,
                        "leave it unset (rule book jumbo_ping_payload %s)" % rulebook.setting("jumbo_ping_payload"))]
    return []


_AFTER_NETWORK = "fabric_ping refuses it after the network stage applied the fabric addresses"
_AFTER_START = "vllm_ready refuses it after the vLLM services were started"
_AFTER_ALL = "vllm_verify refuses it after every stage ran"


def _positive(variable, value, consumer=_AFTER_NETWORK):
    """A whole number above 0, which the module that reads it refuses otherwise, late: fabric_ping (a payload, count
    or wait) after the network stage applied the netplan, vllm_ready (the readiness gate's timeout and completion
    length) after the services started, vllm_verify (its request timeout and completion length) at the very end."""
    if _int(value) is not None and _int(value) > 0:
        return []
    return [Problem(variable, value, "must be a whole number above 0: %s" % consumer,
                    "leave it unset (the role's default)")]


check_each(_positive, ("qsfp_network", "qsfp_network_ping_payload"), ("qsfp_network", "qsfp_network_ping_count"),
           ("qsfp_network", "qsfp_network_ping_wait"),
           ("vllm_service", "vllm_service_readiness_timeout_sec", _AFTER_START),
           ("vllm_service", "vllm_service_readiness_max_tokens", _AFTER_START),
           ("fleet_verify", "fleet_verify_request_timeout", _AFTER_ALL),
           ("fleet_verify", "fleet_verify_max_tokens", _AFTER_ALL))


@check("qsfp_network", "qsfp_network_ping_interval")
def _qsfp_ping_interval(interval):
    """fabric_ping refuses an interval below ping's floor for a user without privileges (0.2 s)."""
    try:
        seconds = None if isinstance(interval, bool) else float(interval)
    except (TypeError, ValueError):
        seconds = None
    if seconds is not None and seconds >= 0.2:
        return []
    return [Problem("qsfp_network_ping_interval", interval, "must be at least 0.2 seconds (ping's floor): fabric_ping "
                    "refuses it after the network stage applied the fabric addresses", "leave it unset (0.2)")]


@check("qsfp_network", "qsfp_network_apply_method")
def _qsfp_apply_method(method):
    return _one_of("qsfp_network_apply_method", method, ("try", "apply"),
                   "use try (netplan try: the host reverts unless the controller confirms)")


@check("qsfp_network", "qsfp_network_confirm_timeout", "qsfp_network_try_timeout")
def _qsfp_timeouts(confirm, try_timeout):
    return _timeout_pair("qsfp_network_confirm_timeout", confirm, "qsfp_network_try_timeout", try_timeout)


@check("qsfp_network", "qsfp_network_netplan_file")
def _qsfp_netplan_file(path):
    if isinstance(path, str) and re.match(r"^/etc/netplan/[^/]+\.yaml$", path):
        return []
    return [Problem("qsfp_network_netplan_file", path, "must be a .yaml file directly under /etc/netplan "
                    "(netplan reads no other place)", "leave it unset (the role's default file under /etc/netplan)")]


# ------------------------------------------------------------------ fabric_firewall

@check("fabric_firewall", "fabric_firewall_confirm_timeout", "fabric_firewall_revert_timeout")
def _firewall_timeouts(confirm, revert):
    number = _int(confirm)
    if number is not None and number < 5:
        return [Problem("fabric_firewall_confirm_timeout", confirm, "is below 5 s: the controller cannot reach "
                        "the host and confirm the new table in that time", "leave it unset (the role's default)")]
    return _timeout_pair("fabric_firewall_confirm_timeout", confirm, "fabric_firewall_revert_timeout", revert)


@check("fabric_firewall", "fabric_firewall_file", "fabric_firewall_confirmed_file")
def _firewall_files(path, confirmed):
    found = _absolute("fabric_firewall_file", path) + _absolute("fabric_firewall_confirmed_file", confirmed)
    if not found and path == confirmed:
        found.append(Problem("fabric_firewall_confirmed_file", confirmed, "is fabric_firewall_file itself: the "
                             "confirmed copy is what the host reverts to and loads at boot",
                             "give the two files different names"))
    return found


# ------------------------------------------------------------------ fleet_health

@check("fleet_health", "fleet_health_interval")
def _health_interval(interval):
    if isinstance(interval, (str, int)) and not isinstance(interval, bool) and \
            re.match(r"^[0-9]+ ?(s|sec|min|m|h|hr)?$", str(interval)):
        return []
    return [Problem("fleet_health_interval", interval, "is no systemd time span the probe's timer takes",
                    "write e.g. 5min, 30s or 1h")]


@check("fleet_health", "fleet_health_timeout")
def _health_timeout(timeout):
    number = _int(timeout)
    if number is not None and number > 0:
        return []
    return [Problem("fleet_health_timeout", timeout, "must be a positive number of seconds", "e.g. 60")]


@check("fleet_health", "fleet_health_node_exporter_port")
def _health_port(port):
    number = _int(port)
    if number is not None and 0 < number < 65536:
        return []
    return [Problem("fleet_health_node_exporter_port", port, "is no TCP port", "leave it unset (the role's default)")]


@check("fleet_health", "fleet_health_textfile_dir")
def _health_textfile_dir(path):
    return _absolute("fleet_health_textfile_dir", path)


@check("fleet_health", "fleet_health_node_exporter_address", "sparkfleet_fabric_address", "fleet_health_node_exporter",
       optional=("sparkfleet_fabric_address", "fleet_health_node_exporter"))
def _health_listen(listen, fabric, node_exporter):
    if node_exporter is not None and not _on(node_exporter):
        return []  # no node_exporter, no address
    if not listen:
        return []  # the management address, from the host's facts (the role checks it there)
    try:
        ipaddress.IPv4Address(str(listen))
    except ValueError:
        return [Problem("fleet_health_node_exporter_address", listen, "is no IPv4 address",
                        "set the host's management address, or leave it unset to take it from the host's facts")]
    if listen == fabric:
        return [Problem("fleet_health_node_exporter_address", listen, "is the host's fabric address: node_exporter "
                        "would answer on the fabric", "set the host's management address")]
    return []


# ------------------------------------------------------------------ memory_guard

@check("memory_guard", "memory_guard_term_percent", "memory_guard_kill_percent",
       optional=("memory_guard_term_percent", "memory_guard_kill_percent"))
def _guard_percents(term, kill):
    """Both thresholds below the headroom the gpu-memory-utilization ceiling leaves (rule memory_guard): above it
    the guard would kill a service that runs at the ceiling as the rule book allows. Unset: the rule book's."""
    term = rulebook.setting("memory_guard_term_percent") if term is None else term
    kill = rulebook.setting("memory_guard_kill_percent") if kill is None else kill
    ceiling = rulebook.setting("gpu_memory_utilization_ceiling")
    headroom = round((1 - ceiling) * 100, 6)
    found = []
    for variable, value in (("memory_guard_term_percent", term), ("memory_guard_kill_percent", kill)):
        number = _int(value)
        if number is None or not 0 < number < headroom:
            found.append(Problem(variable, value, "must be a whole percent above 0 and below %g, the headroom the "
                                 "gpu-memory-utilization ceiling %g leaves (rule memory_guard): at or above it the guard "
                                 "kills vLLM running at the ceiling" % (headroom, ceiling),
                                 "leave it unset (the rule book's %s)" % rulebook.setting(variable)))
    if not found and _int(kill) > _int(term):
        found.append(Problem("memory_guard_kill_percent", kill, "is above memory_guard_term_percent %s: SIGKILL would "
                             "come before SIGTERM" % term, "make it at most memory_guard_term_percent"))
    return found


@check("memory_guard", "memory_guard_swap_percent")
def _guard_swap(percent):
    number = _int(percent)
    if number is not None and 0 <= number <= 100:
        return []
    return [Problem("memory_guard_swap_percent", percent, "is no percent (0-100)",
                    "leave it unset (the rule book's %s: memory alone decides)" % rulebook.setting("memory_guard_swap_percent"))]


def _guard_regex(variable, value):
    """A process-name pattern earlyoom compiles (POSIX extended; Python's re reads the same subset used here) with no
    whitespace (systemd splits the unit's $EARLYOOM_ARGS at whitespace)."""
    if not isinstance(value, str) or not value.strip():
        return [Problem(variable, value, "must be a non-empty regular expression of process names",
                        "leave it unset (the rule book's)")]
    if re.search(r"\s", value):
        return [Problem(variable, value, "holds whitespace: process names (/proc/PID/comm) are matched, and earlyoom's "
                        "unit splits its arguments at whitespace", "remove the whitespace (a comm name holds none)")]
    try:
        re.compile(value)
    except re.error as exc:
        return [Problem(variable, value, "is no regular expression (%s)" % exc, "leave it unset (the rule book's)")]
    return []


check_each(_guard_regex, ("memory_guard", "memory_guard_prefer"), ("memory_guard", "memory_guard_avoid"))


# ------------------------------------------------------------------ model_store

@check("model_store", "model_store_dir")
def _store_dir(path):
    return _absolute("model_store_dir", path)


# ------------------------------------------------------------------ nccl

@check("nccl", "nccl_version")
def _nccl_version(version):
    if re.match(r"^[0-9]+\.[0-9]+\.[0-9]+$", str(version)):
        return []
    return [Problem("nccl_version", version, "is no NCCL release (major.minor.patch)",
                    "leave it unset (the rule book's nccl_version)")]


NCCL_SOURCES = ("git", "archive")


@check("nccl", "nccl_source")
def _nccl_source(source):
    return _one_of("nccl_source", source, NCCL_SOURCES, "leave it unset (git, the rule book's pinned tag)")


@check("nccl", "nccl_source", "nccl_archive")
def _nccl_archive(source, archive):
    if source == "archive" and not archive:
        return [Problem("nccl_archive", archive, "is empty while nccl_source is archive",
                        "give the source archive (a path on the controller), or set nccl_source: git")]
    return []


@check("nccl", "nccl_source", "nccl_git_url", "nccl_git_tag")
def _nccl_git(source, url, tag):
    if source == "git" and not (url and tag):
        return [Problem("nccl_git_url" if not url else "nccl_git_tag", url if not url else tag,
                        "is empty while nccl_source is git", "leave it unset (the rule book's)")]
    return []


@check("nccl", "nccl_tests_enabled", "nccl_tests_source", "nccl_tests_archive")
def _nccl_tests_source(enabled, source, archive):
    wrong = _one_of("nccl_tests_source", source, NCCL_SOURCES, "leave it unset (git, the rule book's pinned tag)")
    if wrong:
        return wrong
    if _on(enabled) and source == "archive" and not archive:
        return [Problem("nccl_tests_archive", archive, "is empty while nccl_tests_source is archive",
                        "give the nccl-tests archive, set nccl_tests_source: git, or nccl_tests_enabled: false")]
    return []


@check("nccl", "nccl_nvcc_gencode")
def _nccl_gencode(gencode):
    if not gencode or re.search(r"-gencode[= ]", str(gencode)):
        return []  # empty: the role computes it from the host's compute capability
    return [Problem("nccl_nvcc_gencode", gencode, "holds no -gencode option for nvcc",
                    "leave it unset (the role builds for the host's compute capability, sm_121 on GB10)")]


# ------------------------------------------------------------------ nvidia_driver

@check("nvidia_driver", "nvidia_driver_branch", "nvidia_driver_accept_forbidden_branch_reason",
       "nvidia_driver_forbidden_branches",
       optional=("nvidia_driver_accept_forbidden_branch_reason", "nvidia_driver_forbidden_branches"))
def _driver_branch(branch, reason, forbidden):
    text = str(branch)
    if not re.match(r"^[0-9]+$", text):
        return [Problem("nvidia_driver_branch", branch, "is no branch number",
                        "write the branch as a quoted string, e.g. '580' (the rule book's driver_branch)")]
    forbidden = [str(b) for b in (forbidden if isinstance(forbidden, list)
                                  else rulebook.setting("driver_forbidden_branches"))]
    if text in forbidden and not (isinstance(reason, str) and reason.strip()):
        return [Problem("nvidia_driver_branch", branch, "the rule book forbids branch %s on GB10 (rule "
                        "driver_branch: CUDA graphs deadlock)" % text,
                        "remove nvidia_driver_branch (the default is %s), or set "
                        "nvidia_driver_accept_forbidden_branch_reason: '<why>'" % rulebook.setting("driver_branch"))]
    return []


@check("nvidia_driver", "nvidia_driver_packages", "nvidia_driver_branch", optional=("nvidia_driver_branch",))
def _driver_packages(packages, branch):
    branch = rulebook.setting("driver_branch") if branch is None else branch  # unset: the role's default reads it
    if not (isinstance(packages, list) and packages):
        return [Problem("nvidia_driver_packages", packages, "must name at least one package",
                        "leave it unset (the branch's driver packages)")]
    # A package of another branch (nvidia-driver-590-open): the role pins and holds the branch's packages only, so
    # apt cannot install it, or the install check after it refuses the branch it brought.
    # The module's package is chosen by nvidia_driver_kernel_module: named here too (the default of earlier releases
    # named the DKMS driver), the role would put DKMS back beside the precompiled module on every run.
    module = [str(p) for p in packages if re.match(r"^(nvidia-dkms-|linux-modules-nvidia-)", str(p))]
    if module:
        return [Problem("nvidia_driver_packages", packages, "names the kernel module's package %s, which "
                        "nvidia_driver_kernel_module chooses (precompiled or dkms)" % ", ".join(module),
                        "leave the module out of nvidia_driver_packages (the user space only), or leave it unset")]
    other = [str(p) for p in packages
             if any(b != str(branch) for b in re.findall(r"-([0-9]{3})(?=-|$|=)", str(p).split("=", 1)[0]))]
    if other:
        return [Problem("nvidia_driver_packages", packages, "%s %s of another branch than nvidia_driver_branch %s: "
                        "the role pins that branch, so the install fails after the earlier hosts changed"
                        % (", ".join(other), "is" if len(other) == 1 else "are", branch),
                        "leave nvidia_driver_packages unset (the branch's packages), or name packages of branch %s"
                        % branch)]
    return []


@check("nvidia_driver", "nvidia_driver_package_state", "nvidia_driver_kernel_module",
       optional=("nvidia_driver_package_state", "nvidia_driver_kernel_module"))
def _driver_state(state, mechanism):
    # With precompiled modules the module of each kernel comes with that kernel: moving the user space alone leaves
    # the module behind, and moving the module metapackage brings a new kernel without the OS update's proof.
    if state == "latest" and (mechanism or "precompiled") == "precompiled":
        return [Problem("nvidia_driver_package_state", state, "moves the driver without its kernel module: with "
                        "precompiled modules (nvidia_driver_kernel_module) kernel, module and user space move as one "
                        "(rule kernel_updates)",
                        "leave it present and move the driver with playbooks/os_update.yml (host by host, drained, "
                        "proven before the reboot)")]
    return []


@check("nvidia_driver", "nvidia_driver_pin_priority")
def _driver_pin(priority):
    number = _int(priority)
    if number is not None and number >= 990:
        return []
    return [Problem("nvidia_driver_pin_priority", priority, "is below 990: another repository's candidate could win "
                    "over the pinned branch", "leave it unset (the role's default)")]


# ------------------------------------------------------------------ vllm_venv

@check("vllm_venv", "vllm_venv_packages", "vllm_venv_nodeps_packages", "vllm_venv_requirements_files")
def _venv_packages(packages, nodeps, requirements):
    lists = [value if isinstance(value, list) else [] for value in (packages, nodeps, requirements)]
    if not any(lists):
        return [Problem("vllm_venv_packages", packages, "nothing to install (vllm_venv_nodeps_packages and "
                        "vllm_venv_requirements_files are empty too)", "leave vllm_venv_packages unset")]
    unpinned = [spec for spec in lists[0] + lists[1] if not isinstance(spec, str) or "==" not in spec]
    if unpinned:
        return [Problem("vllm_venv_packages", unpinned, "not pinned to one version: every node of a cluster must "
                        "run the same code", "pin each with '==' (the rule book's versions)")]
    return []


@check("vllm_venv", "vllm_venv_lock", "vllm_venv_torch_backend", "vllm_venv_packages", "vllm_venv_nodeps_packages",
       "vllm_venv_requirements_files",
       optional=("vllm_venv_packages", "vllm_venv_nodeps_packages", "vllm_venv_requirements_files"))
def _venv_lock(lock, backend, packages, nodeps, requirements):
    """On a CUDA host the lock is what pip installs (with --require-hashes): the host's own pins must be in it. The
    lists are optional: the default package list is a template of the rule book's pins, which the lock is made of."""
    if not _on(lock) or backend != "cuda":
        return []
    fix = ("keep the role's defaults (the rule book's pins, which the lock is made of), or set vllm_venv_lock: false "
           "to resolve your own set without hashes")
    if nodeps or requirements:
        variable, value = ("vllm_venv_nodeps_packages", nodeps)
        if not nodeps:
            variable, value = "vllm_venv_requirements_files", requirements
        return [Problem(variable, value, "cannot be installed with the lock (%s, --require-hashes): pip refuses "
                        "anything without a hash in it" % venv_lock.LOCK_NAME, fix)]
    # Specs without one pinned version are _venv_packages' finding, not this one's.
    pinned = [spec for spec in (packages if isinstance(packages, list) else []) if venv_lock.pin_of(spec)]
    wrong = venv_lock.disagreements(pinned, venv_lock.load())
    if wrong:
        return [Problem("vllm_venv_packages", packages, "disagrees with the lock the role installs on a CUDA host "
                        "(%s): %s" % (venv_lock.LOCK_NAME, "; ".join(wrong)),
                        fix + "; a new pin in the rule book regenerates the lock (make spark-lock)")]
    return []


@check("vllm_venv", "vllm_venv_path")
def _venv_path(path):
    return _absolute("vllm_venv_path", path)


@check("vllm_venv", "vllm_venv_wheelhouse", "vllm_venv_index_url")
def _venv_source(wheelhouse, index_url):
    if wheelhouse and index_url:
        return [Problem("vllm_venv_index_url", index_url, "is set together with vllm_venv_wheelhouse",
                        "give one source: the wheelhouse (offline) or the index")]
    return []


# ------------------------------------------------------------------ the sandbox of the GPU units

# What a unit that runs vLLM's GPU code must reach through its sandbox (rules nvidia_device_nodes and gpudirect_rdma):
# the NVIDIA device nodes and the RDMA devices NCCL registers its buffers with. Each is (what, DeviceAllow= entries
# that grant it, by prefix).
GPU_UNIT_DEVICES = (
    ("the NVIDIA device nodes (/dev/nvidia*)", ("char-nvidia", "/dev/nvidia")),
    ("the RDMA devices NCCL uses (/dev/infiniband/*)", ("char-infiniband", "/dev/infiniband")),
)


def _sandbox(variable, hardening):
    """A hardening map (systemd [Service] directives) must not hide the GPU or the RDMA devices: no PrivateDevices,
    and under DevicePolicy=closed or strict a DeviceAllow= entry for each."""
    if not isinstance(hardening, dict):
        return []
    if _on(hardening.get("PrivateDevices", False)):
        return [Problem(variable, hardening, "PrivateDevices=%s hides /dev/nvidia* and /dev/infiniband from the unit: "
                        "CUDA finds no GPU" % hardening["PrivateDevices"],
                        "remove PrivateDevices; the role's default (DevicePolicy=closed with DeviceAllow) sandboxes "
                        "the devices instead")]
    if str(hardening.get("DevicePolicy", "auto")).strip().lower() not in ("closed", "strict"):
        return []
    allowed = hardening.get("DeviceAllow") or []
    allowed = [str(entry) for entry in (allowed if isinstance(allowed, list) else [allowed])]
    missing = [what for what, prefixes in GPU_UNIT_DEVICES
               if not any(entry.strip().startswith(prefixes) for entry in allowed)]
    if not missing:
        return []
    return [Problem(variable, hardening, "DevicePolicy=%s without a DeviceAllow for %s: the unit could not open them"
                    % (hardening["DevicePolicy"], " and ".join(missing)),
                    "keep the role's DeviceAllow entries (char-nvidia* rw, char-infiniband_verbs rw, "
                    "/dev/infiniband/rdma_cm rw) in the map")]


# The ray executor's GPU workers run under the Ray unit.
check_each(_sandbox, ("vllm_service", "vllm_service_hardening"), ("ray", "ray_hardening"))


# ------------------------------------------------------------------ ray

# The head's setting, refused on any host that sets it: a worker ignores it, and a value that would expose the
# dashboard is a mistake wherever it is written (group_vars of all hosts, say).
@check("ray", "ray_head_dashboard_host")
def _ray_dashboard(host):
    if host in ("127.0.0.1", "::1", "localhost"):
        return []
    return [Problem("ray_head_dashboard_host", host, "the dashboard answers without the cluster token, so it "
                    "listens on the head's loopback only", "leave it unset (the head's loopback); reach it through an SSH tunnel")]


@check("ray", "ray_num_gpus")
def _ray_gpus(gpus):
    number = _int(gpus)
    if number is not None and number >= 1:
        return []
    return [Problem("ray_num_gpus", gpus, "a Ray node of a Spark declares its GPU",
                    "leave it unset (rule book gpus_per_node: %s)" % rulebook.setting("gpus_per_node"))]


def _unit_name(variable, value):
    """A name systemd takes for a plain unit, without its suffix (the role adds .service): letters, digits and
    ':_.-', at most 247 characters (255 with the suffix)."""
    if not (isinstance(value, str) and value.strip()):
        return [Problem(variable, value, "is empty", "leave it unset (the fleet default)")]
    if value.endswith(".service"):
        return [Problem(variable, value, "ends with .service: the role adds the suffix, so the unit would be %s.service"
                        % value, "write %s" % value[:-len(".service")])]
    if not re.match(r"^[A-Za-z0-9:_.-]{1,247}$", value):
        return [Problem(variable, value, "is no name systemd takes for a unit (letters, digits and ':_.-' only, at most "
                        "247 characters): the role could not install or start it", "write e.g. %s"
                        % (re.sub(r"[^A-Za-z0-9:_.-]+", "-", value.strip()).strip("-")[:247] or "sparkfleet-ray-head"))]
    return []


check_each(_unit_name, ("ray", "ray_head_service_name"), ("ray", "ray_worker_service_name"))


def _ipv4_or_unset(variable, value, fix):
    if value in (None, ""):
        return []  # unset: the fleet plan's address (the role refuses a node without one)
    try:
        ipaddress.IPv4Address(str(value))
    except ValueError:
        return [Problem(variable, value, "is no IPv4 address", fix)]
    return []


check_each(_ipv4_or_unset, ("ray", "ray_node_ip", "leave it unset: the host's sparkfleet_fabric_address"),
           ("ray", "ray_worker_head_address", "leave it unset: the head's sparkfleet_fabric_address"))


def _click_int(variable, value, fix):
    """A ``ray start`` option of click's INT type: click takes an integer or its digits; a size such as '10GB' or a
    float stops the unit with 'is not a valid integer'."""
    number = _int(value)
    if number is not None and number >= 0:
        return []
    return [Problem(variable, value, "ray start reads it as a whole number (click INT)", fix)]


check_each(_click_int, ("ray", "ray_num_cpus", "write a whole number of CPUs, or 0 to let Ray count them (the default)"),
           ("ray", "ray_object_store_memory", "write the size in bytes (e.g. 10737418240 for 10 GiB), or 0 to let Ray "
            "choose (the default)"))


@check("ray", "ray_extra_args")
def _ray_extra(extra):
    return [Problem("ray_extra_args", extra, problem, fix) for problem, fix in ray_args.extra_args_problems(extra)]


def _port(value):
    number = _int(value)
    return number if number is not None and PORT_RANGE[0] <= number <= PORT_RANGE[1] else None


def _ray_port_map(variable, ports):
    """``ray_head_ports`` / ``ray_worker_ports`` as the inventory writes them: merged over the role's default key by
    key (``fleet_plan.ray_ports``), so a map may name only the ports it moves; no other key (a misspelt one would be
    ignored), each an integer port (click INT), every merged port distinct, min_worker below max_worker."""
    if not isinstance(ports, dict):
        return [Problem(variable, ports, "must be a mapping of Ray port names to ports", "name only the ports you move, "
                        "e.g. {gcs: 6400}")]
    defaults = fleet_plan.default_ray_ports(variable[:-len("_ports")])
    found = []
    for key in sorted(ports, key=str):
        if key not in defaults:
            close = difflib.get_close_matches(str(key), sorted(defaults), n=1)
            found.append(Problem("%s.%s" % (variable, key), ports[key], "no Ray port: the map is merged over the "
                                 "role's default key by key, so it would be ignored"
                                 + (" (did you mean '%s'?)" % close[0] if close else ""),
                                 ("rename it to '%s'" % close[0]) if close else
                                 "remove it; the keys are %s" % ", ".join(sorted(defaults))))
        elif _port(ports[key]) is None:
            found.append(Problem("%s.%s" % (variable, key), ports[key], "must be an integer port %d-%d (ray start reads "
                                 "it as click INT)" % PORT_RANGE, "write a port number, e.g. the default %s"
                                 % defaults[key]))
    if found:
        return found
    merged = dict(defaults, **ports)
    owners = {}
    for key in sorted(merged):
        owners.setdefault(_port(merged[key]), []).append(key)
    for port, keys in sorted(owners.items()):
        if len(keys) > 1:
            # Blamed on the key the inventory moved off its default (the defaults are distinct).
            moved = [k for k in keys if k in ports and _port(ports[k]) != _port(defaults[k])] or keys
            others = [k for k in keys if k != moved[0]]
            found.append(Problem("%s.%s" % (variable, moved[0]), merged[moved[0]], "also the port of %s: Ray binds "
                                 "each port once" % " and ".join(others), "give %s a port of its own (the role's "
                                 "defaults: %s)" % (moved[0], ", ".join("%s=%s" % (k, defaults[k]) for k in keys))))
    low, high = _port(merged.get("min_worker")), _port(merged.get("max_worker"))
    if low is not None and high is not None and low >= high:
        found.append(Problem("%s.min_worker" % variable, merged["min_worker"], "not below max_worker %s" % high,
                             "make min_worker < max_worker (the role's default %s-%s)"
                             % (defaults.get("min_worker"), defaults.get("max_worker"))))
    return found


check_each(_ray_port_map, ("ray", "ray_head_ports"), ("ray", "ray_worker_ports"))


# ------------------------------------------------------------------ the services' environments

# systemd reads an environment name as [A-Za-z_][A-Za-z0-9_]* (env_name_is_valid): it skips any other line of an
# EnvironmentFile with only a log warning, so the setting would silently not reach the service.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(name):
    """``name`` with every character systemd refuses in an environment name made a ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", str(name))


def _shown(name, value):
    """An environment value as a refusal may print it: hidden where the name or the value looks like a secret."""
    if is_secret(_env_name(name)) or SECRET_VALUE.search(str(value)):
        return SECRET_SHOWN
    return value


# Where each kind of secret a service reads is kept instead: a root-only (0600) file the role writes from a no_log
# variable. By environment name; any other secret has no place in a service's environment map.
SECRET_HOMES = {
    "HF_TOKEN": "vllm_service_hf_token (HF_TOKEN in the unit's root-only secrets file), or a source: with "
                "model_store_hf_token, whose weights the service reads offline",
    "HUGGING_FACE_HUB_TOKEN": "vllm_service_hf_token (HF_TOKEN in the unit's root-only secrets file)",
    "HF_HUB_TOKEN": "vllm_service_hf_token (HF_TOKEN in the unit's root-only secrets file)",
    "VLLM_API_KEY": "vllm_service_api_key (vault it), or the entry's api_key_file (a root-only file with "
                    "VLLM_API_KEY=...)",
}
# Where each environment map lands: what a secret written there would be shown to.
ENV_FILES = {
    "vllm_service_environment": "Environment= of the vLLM unit file (mode 0644: every account reads it, and "
                                "`systemctl show` prints it)",
    "ray_environment": "the Ray environment file (mode 0640, group of the service account) and every Ray worker "
                       "process",
    "nccl_env_extra": "the NCCL environment file (mode 0644), which every unit loads",
}


def _environment_secret(variable, name, value):
    """A secret in an environment map: refused, with the root-only place it belongs."""
    if not (redaction.names_secret(_env_name(name)) or SECRET_VALUE.search(str(value))):
        return []
    home = SECRET_HOMES.get(str(name).upper())
    return [Problem("%s.%s" % (variable, name), SECRET_SHOWN, "a secret here is written to %s, not to a root-only "
                    "file" % ENV_FILES.get(variable, "a file every account reads"),
                    "remove it from %s and set %s" % (variable, home) if home else
                    "remove it from %s; the collection keeps only the Hub token (vllm_service_hf_token, "
                    "model_store_hf_token) and the API key (vllm_service_api_key, api_key_file) in root-only files"
                    % variable)]


def _environment(variable, env):
    """What the inventory adds to a service's environment: names systemd takes, values on one line, no secret (it
    would land in a file other accounts read), and nothing that undoes the rule book's kernel rules
    (rulebook.env_violations)."""
    if not isinstance(env, dict):
        return [Problem(variable, env, "must be a mapping of variable names to values", "write NAME: value pairs")]
    found = [Problem("%s.%s" % (variable, name), _shown(name, env[name]), "systemd takes only names of letters, digits and _ "
                     "(not starting with a digit) and skips any other line, so it would never reach the service",
                     "write the name as the program reads it, e.g. %s" % _env_name(name))
             for name in sorted(env, key=str) if not ENV_NAME.match(str(name))]
    for name in sorted(env, key=str):
        found.extend(_environment_secret(variable, name, env[name]))
        if isinstance(env[name], str) and re.search(r"[\r\n]", env[name]):
            found.append(Problem("%s.%s" % (variable, name), _shown(name, env[name]), "holds a line break: systemd "
                                 "reads an environment line up to it and takes the rest for a line of its own (or "
                                 "drops it), so the service never gets this value",
                                 "write the value on one line (YAML's '>-' folds a long one)"))
    found.extend(Problem("%s.%s" % (variable, name), _shown(name, value), "the rule book forbids it (rule %s)" % rule_id, fix)
                 for name, value, rule_id, fix in rulebook.env_violations(env))
    return found


# The ray executor's GPU workers run vLLM under the Ray unit, with its environment; the NCCL environment file is
# loaded by every unit.
check_each(_environment, ("vllm_service", "vllm_service_environment"), ("ray", "ray_environment"),
           ("nccl", "nccl_env_extra"))
