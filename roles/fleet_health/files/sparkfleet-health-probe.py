#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Health probe of one sparkfleet.gb10 host (installed by sparkfleet.gb10.fleet_health).

    sparkfleet-health-probe --config /etc/sparkfleet/health/probe.json

Checks, for this host: each vLLM endpoint it serves (/health, /v1/models and a
one-token completion with the endpoint's API key), each vLLM and Ray unit
(active, restarts, failed, the NCCL its process loaded), on a Ray head the
member count, the loaded kernel
module against the user-space driver, the fabric MTU and a don't-fragment ping
to every peer, that the kernel the next boot starts has the NVIDIA module of
the pinned branch and is not one the rule book knows as bad on Sparks (an
update made by hand is caught before the reboot), the
memory left (MemAvailable) and the memory pressure (PSI); and
exports the last benchmark sweep (playbooks/benchmark.yml)
where the host keeps one, and when it last dropped its page cache before a
model loaded (the record of sparkfleet.gb10.vllm_service's page-cache helper). It writes the results as Prometheus text-format metrics into
node_exporter's textfile directory, atomically (temporary file + rename), and
prints one line per failed check. Standard library only; runs as root (the
API key files are root-only).

Exit status: 0 when the metrics were written (whatever they say), 2 when the
configuration is unreadable or the metrics could not be written.

METRICS below is the one list of the metric names this probe writes: the alert
rules and the dashboard of the collection are checked against it.
"""

from __future__ import annotations

import argparse
import calendar
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

# name: (type, help). Everything the probe writes; nothing else.
METRICS = {
    "sparkfleet_health_probe_last_run_timestamp_seconds": ("gauge", "Unix time the probe finished."),
    "sparkfleet_health_probe_duration_seconds": ("gauge", "Seconds the probe took."),
    "sparkfleet_vllm_endpoint_up": ("gauge", "1 when the endpoint passed every check (health, models, completion)."),
    "sparkfleet_vllm_endpoint_check": ("gauge", "1 when one check of the endpoint passed, by check."),
    "sparkfleet_vllm_completion_seconds": ("gauge", "Seconds the one-token completion took."),
    "sparkfleet_unit_active": ("gauge", "1 when the systemd unit is active."),
    "sparkfleet_unit_failed": ("gauge", "1 when the systemd unit is in the failed state (e.g. start limit hit)."),
    "sparkfleet_unit_restarts": ("gauge", "Automatic restarts of the systemd unit since its last manual start (NRestarts)."),
    "sparkfleet_unit_nccl_ours": ("gauge", "1 when the running unit's process started with the NCCL of sparkfleet.gb10.nccl "
                                           "first (LD_LIBRARY_PATH, and VLLM_NCCL_SO_PATH for vLLM)."),
    "sparkfleet_ray_members_alive": ("gauge", "Active Ray nodes the head reports."),
    "sparkfleet_ray_members_expected": ("gauge", "Ray nodes the inventory places in the cluster."),
    "sparkfleet_driver_info": ("gauge", "Loaded kernel module and user-space driver versions ('unknown' when unreadable)."),
    "sparkfleet_driver_versions_agree": ("gauge", "1 when the kernel module and user-space driver versions agree "
                                                  "(absent when either is unknown)."),
    "sparkfleet_fabric_mtu": ("gauge", "MTU of the fabric interface (0 when the interface is missing)."),
    "sparkfleet_fabric_mtu_expected": ("gauge", "MTU the fabric must have."),
    "sparkfleet_fabric_peer_reachable": ("gauge", "1 when a don't-fragment jumbo ping reached the peer."),
    "sparkfleet_kernel_info": ("gauge", "The running kernel and the one the next boot starts (GRUB's choice)."),
    "sparkfleet_next_boot_nvidia_module": ("gauge", "1 when the kernel the next boot starts has the NVIDIA kernel module "
                                                    "of the pinned driver branch; 0 means no GPU after the next reboot."),
    "sparkfleet_next_boot_kernel_known_bad": ("gauge", "1 when the kernel the next boot starts is on the rule book's "
                                                       "known-bad list (rule kernel_updates), else 0."),
    "sparkfleet_do_not_reboot": ("gauge", "1 while os_update's record says not to reboot the host (a stop past its "
                                          "upgrade: the kernel the next boot would start was not proven), with the "
                                          "step, the running kernel and the refused one; else 0."),
    "sparkfleet_benchmark_output_tokens_per_second": ("gauge", "Output tokens per second of the last benchmark sweep, "
                                                               "summed over the concurrent requests, by concurrency."),
    "sparkfleet_benchmark_ttft_p99_seconds": ("gauge", "p99 time to first token of the last benchmark sweep."),
    "sparkfleet_benchmark_itl_p99_seconds": ("gauge", "p99 inter-token latency of the last benchmark sweep."),
    "sparkfleet_benchmark_roofline_share": ("gauge", "Output tokens per second of one stream over the model's decode "
                                                     "roofline (absent for simulated figures)."),
    "sparkfleet_benchmark_timestamp_seconds": ("gauge", "Unix time of the last benchmark sweep of the model; label "
                                                        "form: spark or simulated."),
    "sparkfleet_memory_total_bytes": ("gauge", "MemTotal of /proc/meminfo: on GB10 the unified pool CPU and GPU share."),
    "sparkfleet_memory_available_bytes": ("gauge", "MemAvailable of /proc/meminfo: what can still be allocated without "
                                                   "swapping; the memory guard acts below its percent of MemTotal."),
    "sparkfleet_memory_pressure_ratio": ("gauge", "Share of time (0-1) tasks stalled on memory (/proc/pressure/memory "
                                                  "avg10/avg60/avg300, label window in seconds); kind some: at least "
                                                  "one task, full: every non-idle task at once."),
    "sparkfleet_memory_pressure_stalled_seconds_total": ("counter", "Seconds tasks stalled on memory since boot "
                                                                    "(/proc/pressure/memory total), by kind."),
    "sparkfleet_page_cache_dropped_timestamp_seconds": ("gauge", "Unix time this host last dropped its page cache "
                                                                 "before a model loaded: how=local (a vLLM unit of "
                                                                 "its own started) or how=asked (the head of a "
                                                                 "multi-node model it follows asked, before its start)."),
}

PROC_VERSION_RE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")
NVML_MISMATCH_RE = re.compile(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)")
SMI_VERSION_RE = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)?)\s*$")
RAY_ACTIVE_NODE_RE = re.compile(r"^\s*1 node_\w+", re.MULTILINE)
UNKNOWN = "unknown"


# ------------------------------------------------------------------ rendering
def escape_label(value):
    """A label value as the text format wants it: backslash, quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return repr(value)
    raise ValueError("metric value %r is not a number" % (value,))


def render(samples):
    """Prometheus text format of [(name, {label: value}, number)], grouped by METRICS order.

    Unknown names and non-numeric values raise ValueError: a typo must not
    produce a metric no rule or panel reads.
    """
    by_name = {}
    for name, labels, value in samples:
        if name not in METRICS:
            raise ValueError("metric %s is not in METRICS" % name)
        by_name.setdefault(name, []).append((labels or {}, value))
    lines = []
    for name, (kind, text) in METRICS.items():
        if name not in by_name:
            continue
        lines.append("# HELP %s %s" % (name, text))
        lines.append("# TYPE %s %s" % (name, kind))
        for labels, value in by_name[name]:
            label_text = ",".join('%s="%s"' % (k, escape_label(labels[k])) for k in sorted(labels))
            lines.append("%s%s %s" % (name, "{%s}" % label_text if label_text else "", format_value(value)))
    return "\n".join(lines) + "\n"


def write_atomically(directory, filename, text):
    """Write text to directory/filename through a temporary file in the same directory and a rename.

    node_exporter never reads a half-written file. The file is world-readable
    (node_exporter runs unprivileged); it holds no secrets.
    """
    fd, tmp = tempfile.mkstemp(prefix="." + filename + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(directory, filename))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------- parsing
def parse_env_file(text):
    """KEY=value lines of a systemd EnvironmentFile (comments, blanks, quotes, 'export ')."""
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def parse_proc_version(text):
    """The kernel module's version from /proc/driver/nvidia/version, or None."""
    match = PROC_VERSION_RE.search(text or "")
    return match.group(1) if match else None


def parse_smi_version(rc, out):
    """The user-space driver version from `nvidia-smi --query-gpu=driver_version --format=csv,noheader`.

    When the module and the library differ nvidia-smi fails with NVML's
    'Driver/library version mismatch' and names the library's version; that is
    the user-space version too. None when neither is there.
    """
    if rc == 0:
        lines = [line for line in (out or "").splitlines() if line.strip()]
        match = SMI_VERSION_RE.match(lines[0]) if lines else None
        if match:
            return match.group(1)
    match = NVML_MISMATCH_RE.search(out or "")
    return match.group(1) if match else None


def parse_ray_status(text):
    """Active nodes in `ray status` output."""
    return len(RAY_ACTIVE_NODE_RE.findall(text or ""))


def parse_systemctl_show(text):
    """`systemctl show -p A -p B` output as a dict."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key] = value
    return values


def parse_environ(data):
    """/proc/<pid>/environ (NUL-separated bytes) as a dict."""
    values = {}
    for item in (data or b"").split(b"\0"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep:
            values[key] = value
    return values


def nccl_is_ours(process_env, nccl_env, kind):
    """True when the process loads the NCCL the nccl role's environment file names, first.

    The first LD_LIBRARY_PATH entry must be the file's, and where the file preloads
    the library (LD_PRELOAD: torch's own collectives bind to it) the process must
    preload it too; a vLLM process must also have the file's VLLM_NCCL_SO_PATH.
    None when the file names no library path.
    """
    wanted = (nccl_env.get("LD_LIBRARY_PATH") or "").split(":")[0]
    if not wanted:
        return None
    ours = (process_env.get("LD_LIBRARY_PATH") or "").split(":")[0] == wanted
    if nccl_env.get("LD_PRELOAD"):
        preloaded = (process_env.get("LD_PRELOAD") or "").replace(":", " ").split()
        ours = ours and nccl_env["LD_PRELOAD"] in preloaded
    if kind == "vllm" and nccl_env.get("VLLM_NCCL_SO_PATH"):
        ours = ours and process_env.get("VLLM_NCCL_SO_PATH") == nccl_env["VLLM_NCCL_SO_PATH"]
    return ours


def models_lists(body, served_name):
    """True when a /v1/models answer lists served_name."""
    try:
        data = json.loads(body)
        return any(item.get("id") == served_name for item in data.get("data", []))
    except (ValueError, AttributeError, TypeError):
        return False


def completion_tokens(body):
    """usage.completion_tokens of a /v1/completions answer, 0 when absent."""
    try:
        return int(json.loads(body).get("usage", {}).get("completion_tokens") or 0)
    except (ValueError, AttributeError, TypeError):
        return 0


# ------------------------------------------------------------------- probing
def run(argv, timeout, env=None):
    """(rc, combined output); rc 127 when the program is missing, 124 on timeout."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                              env=env, check=False, universal_newlines=True)
        return proc.returncode, proc.stdout
    except FileNotFoundError as exc:
        return 127, str(exc)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %ss" % timeout


def http(url, timeout, key=None, body=None):
    """(status, body); status 0 with the reason as body when no answer came."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return 0, str(getattr(exc, "reason", exc))


def read_key(endpoint):
    """The endpoint's VLLM_API_KEY from its key file, None when there is no file or no key."""
    path = endpoint.get("api_key_file")
    if not path or not os.path.isfile(path):
        return None
    with open(path) as handle:
        return parse_env_file(handle.read()).get("VLLM_API_KEY") or None


def probe_endpoint(endpoint, timeout, http_get=http):
    """{check: bool} and the completion's seconds for one endpoint."""
    base = "http://%s:%s" % (endpoint.get("host", "127.0.0.1"), endpoint["port"])
    key = read_key(endpoint)
    served = endpoint["served_name"]
    checks = {}
    status, _body = http_get(base + "/health", timeout)
    checks["health"] = status == 200
    status, body = http_get(base + "/v1/models", timeout, key)
    checks["models"] = status == 200 and models_lists(body, served)
    started = time.monotonic()
    status, body = http_get(base + "/v1/completions", timeout, key,
                            {"model": served, "prompt": "Hello", "max_tokens": 1, "temperature": 0})
    seconds = time.monotonic() - started
    checks["completion"] = status == 200 and completion_tokens(body) >= 1
    return checks, seconds


def endpoint_samples(endpoint, checks, seconds):
    labels = {"model": endpoint["name"], "port": str(endpoint["port"])}
    samples = [("sparkfleet_vllm_endpoint_check", dict(labels, check=name), ok) for name, ok in sorted(checks.items())]
    samples.append(("sparkfleet_vllm_endpoint_up", labels, all(checks.values())))
    if checks.get("completion"):
        samples.append(("sparkfleet_vllm_completion_seconds", labels, round(seconds, 3)))
    return samples


def unit_samples(unit, kind, show):
    """Samples of one unit from its `systemctl show` properties."""
    labels = {"unit": unit, "kind": kind}
    restarts = show.get("NRestarts", "")
    samples = [
        ("sparkfleet_unit_active", labels, show.get("ActiveState") == "active"),
        ("sparkfleet_unit_failed", labels, show.get("ActiveState") == "failed"),
    ]
    if restarts.isdigit():
        samples.append(("sparkfleet_unit_restarts", labels, int(restarts)))
    return samples


def driver_samples(module_version, userspace_version):
    samples = [("sparkfleet_driver_info", {"kernel_module": module_version or UNKNOWN,
                                           "userspace": userspace_version or UNKNOWN}, 1)]
    if module_version and userspace_version:
        samples.append(("sparkfleet_driver_versions_agree", {}, module_version == userspace_version))
    return samples


def next_boot_kernel(kernel, running):
    """The kernel release the next boot starts, as GRUB chooses it (grub.cfg's entry by next_entry, GRUB_DEFAULT or
    saved_entry), else the running one: plugins/module_utils/grub_boot.py (next_boot), the one definition the OS
    update proves a reboot with (os_update_plan), which the role installs beside this script (KERNEL's lib_dir)."""
    lib_dir = kernel.get("lib_dir") or "/usr/local/lib/sparkfleet"
    if lib_dir not in sys.path:
        sys.path.insert(0, lib_dir)
    import grub_boot  # pylint: disable=import-error,import-outside-toplevel
    found = grub_boot.next_boot(kernel.get("boot_dir", "/boot"), kernel.get("grub_dir") or None,
                                kernel.get("etc_default", "/etc/default"))
    return found["release"] or running


def kernel_samples(running, next_boot, module_version, kernel):
    """Samples of the kernel check, and the failure lines: the next boot's kernel without the NVIDIA module of the
    branch, or on the rule book's known-bad list. KERNEL is the probe's kernel settings: branch, module_package
    and headers_package (patterns with {branch} and {kernel}) and known_bad_kernels, from rule kernel_updates."""
    branch = kernel.get("branch")
    ok = bool(module_version) and (not branch or module_version.split(".")[0] == str(branch))
    bad = next((item for item in kernel.get("known_bad_kernels") or [] if item.get("release") == next_boot), None)
    samples = [("sparkfleet_kernel_info", {"running": running or UNKNOWN, "next_boot": next_boot or UNKNOWN}, 1),
               ("sparkfleet_next_boot_nvidia_module", {"kernel": next_boot or UNKNOWN, "branch": str(branch or ""),
                                                       "version": module_version or "none"}, ok),
               ("sparkfleet_next_boot_kernel_known_bad", {"kernel": next_boot or UNKNOWN}, bad is not None)]
    failures = []
    if not ok:
        names = [pattern.format(branch=branch, kernel=next_boot) for pattern in
                 (kernel.get("module_package"), kernel.get("headers_package")) if pattern]
        found = ("has NVIDIA module %s, not of the %s branch" % (module_version, branch) if module_version
                 else "has no NVIDIA kernel module")
        failures.append("kernel: the next boot's kernel %s %s: after a reboot this host has no GPU. Install %s "
                        "(or boot the running kernel %s) before rebooting"
                        % (next_boot, found, " (DGX OS), or with the DKMS driver ".join(names) or "its module",
                           running))
    if bad is not None:
        failures.append("kernel: the next boot's kernel %s is known bad on Sparks: %s (%s). Fix: %s"
                        % (next_boot, bad.get("why"), ", ".join(bad.get("sources") or []), bad.get("fix")))
    return samples, failures


def benchmark_samples(sweep):
    """Samples of the last benchmark sweep (the JSON sparkfleet.gb10.fleet_benchmark keeps on the host)."""
    samples = []
    try:
        stamp = calendar.timegm(time.strptime(sweep.get("generated", ""), "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        stamp = None
    for model in sweep.get("models") or []:
        name = model.get("name")
        if not name:
            continue
        if stamp is not None:
            samples.append(("sparkfleet_benchmark_timestamp_seconds",
                            {"model": name, "form": "simulated" if model.get("simulated") else "spark"}, stamp))
        shares = {row.get("concurrency"): row.get("roofline_share") for row in model.get("rows") or []}
        for point in model.get("points") or []:
            labels = {"model": name, "concurrency": str(point.get("concurrency"))}
            for metric, key, scale in (("sparkfleet_benchmark_output_tokens_per_second", "output_tok_s", 1.0),
                                       ("sparkfleet_benchmark_ttft_p99_seconds", "ttft_p99_ms", 0.001),
                                       ("sparkfleet_benchmark_itl_p99_seconds", "itl_p99_ms", 0.001)):
                if isinstance(point.get(key), (int, float)):
                    samples.append((metric, labels, round(float(point[key]) * scale, 6)))
            if isinstance(shares.get(point.get("concurrency")), (int, float)):
                samples.append(("sparkfleet_benchmark_roofline_share", labels,
                                float(shares[point.get("concurrency")])))
    return samples


def reboot_hold_samples(record):
    """sparkfleet_do_not_reboot from os_update's record (None: no record, 0)."""
    if record is None:
        return [("sparkfleet_do_not_reboot", {}, 0)]
    record = record if isinstance(record, dict) else {}
    labels = dict((key, str(record.get(key) or UNKNOWN)) for key in ("step", "running_kernel", "refused_kernel"))
    return [("sparkfleet_do_not_reboot", labels, 1)]


def page_cache_samples(state):
    """When this host last dropped its page cache before a load, by how it was asked for (``local``: a vLLM unit of
    its own started; ``asked``: the head of a multi-node model it follows asked), from the helper's record
    (``{last, recent}``, each drop with ``at``, ``ok`` and ``how``). Failed drops do not count."""
    latest = {}
    entries = list(state.get("recent") or []) + [state.get("last")]
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("ok") or entry.get("how") not in ("local", "asked"):
            continue
        if isinstance(entry.get("at"), (int, float)) and not isinstance(entry.get("at"), bool):
            latest[entry["how"]] = max(latest.get(entry["how"], 0.0), float(entry["at"]))
    return [("sparkfleet_page_cache_dropped_timestamp_seconds", {"how": how}, latest[how]) for how in sorted(latest)]


def parse_meminfo(text):
    """{field: value} of /proc/meminfo, in bytes for the fields given in kB (counts such as HugePages_Total as they
    are)."""
    found = {}
    for line in text.splitlines():
        name, _sep, rest = line.partition(":")
        parts = rest.split()
        if not name or not parts or not parts[0].isdigit():
            continue
        found[name.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return found


def parse_pressure(text):
    """{kind: {"avg10": ratio, "avg60": ratio, "avg300": ratio, "total": seconds}} of a /proc/pressure file (PSI:
    avgN are percents of time, total is microseconds)."""
    found = {}
    for line in text.splitlines():
        kind, _sep, rest = line.strip().partition(" ")
        if kind not in ("some", "full"):
            continue
        fields = dict(pair.split("=", 1) for pair in rest.split() if "=" in pair)
        try:
            values = dict(("avg%s" % window, float(fields["avg%s" % window]) / 100.0) for window in (10, 60, 300))
            values["total"] = int(fields["total"]) / 1e6
        except (KeyError, ValueError):
            continue
        found[kind] = values
    return found


def memory_samples(meminfo, pressure):
    """Samples of the host's memory: MemTotal and MemAvailable (when present) and memory PSI by kind and window."""
    samples = []
    for field, name in (("MemTotal", "sparkfleet_memory_total_bytes"),
                        ("MemAvailable", "sparkfleet_memory_available_bytes")):
        if field in meminfo:
            samples.append((name, {}, meminfo[field]))
    for kind in sorted(pressure):
        for window in (10, 60, 300):
            samples.append(("sparkfleet_memory_pressure_ratio", {"kind": kind, "window": str(window)},
                            round(pressure[kind]["avg%d" % window], 6)))
        samples.append(("sparkfleet_memory_pressure_stalled_seconds_total", {"kind": kind},
                        round(pressure[kind]["total"], 6)))
    return samples


def read_text(path):
    """The text of a file, or None when it cannot be read (a kernel without PSI has no /proc/pressure)."""
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def read_mtu(sysfs_net, ifname):
    try:
        with open(os.path.join(sysfs_net, ifname, "mtu")) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return 0


def collect(config, runner=run, http_get=http):
    """Every sample of this host, and the list of failed checks (one line each)."""
    timeout = float(config.get("timeout", 30))
    samples, failures = [], []

    for endpoint in config.get("endpoints", []):
        checks, seconds = probe_endpoint(endpoint, timeout, http_get)
        samples += endpoint_samples(endpoint, checks, seconds)
        failures += ["endpoint %s:%s %s failed" % (endpoint["name"], endpoint["port"], name)
                     for name, ok in sorted(checks.items()) if not ok]

    nccl_env = {}
    if config.get("nccl_env_file") and os.path.isfile(config["nccl_env_file"]):
        with open(config["nccl_env_file"]) as handle:
            nccl_env = parse_env_file(handle.read())
    for unit in config.get("units", []):
        _rc, out = runner(["systemctl", "show", "-p", "ActiveState", "-p", "NRestarts", "-p", "MainPID",
                           unit["name"] + ".service"], timeout)
        show = parse_systemctl_show(out)
        unit_s = unit_samples(unit["name"], unit["kind"], show)
        samples += unit_s
        if not unit_s[0][2]:
            failures.append("unit %s is not active" % unit["name"])
        pid = show.get("MainPID", "0")
        # Only GPU units load NCCL: the memory guard (kind guard) is watched for being up, nothing else.
        if nccl_env and unit["kind"] in ("vllm", "ray") and pid.isdigit() and int(pid) > 0:
            try:
                with open(os.path.join(config.get("proc_root", "/proc"), pid, "environ"), "rb") as handle:
                    ours = nccl_is_ours(parse_environ(handle.read()), nccl_env, unit["kind"])
            except OSError:
                ours = None
            if ours is not None:
                samples.append(("sparkfleet_unit_nccl_ours", {"unit": unit["name"], "kind": unit["kind"]}, ours))
                if not ours:
                    failures.append("unit %s did not start with the NCCL of %s first" % (unit["name"],
                                                                                         config["nccl_env_file"]))

    ray = config.get("ray") or {}
    if ray.get("expected_members"):
        env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=ray["token_file"])
        rc, out = runner([ray["ray"], "status", "--address=" + ray["address"]], timeout, env)
        alive = parse_ray_status(out) if rc == 0 else 0
        samples.append(("sparkfleet_ray_members_alive", {}, alive))
        samples.append(("sparkfleet_ray_members_expected", {}, int(ray["expected_members"])))
        if alive < int(ray["expected_members"]):
            failures.append("ray: %d of %d members alive" % (alive, int(ray["expected_members"])))

    driver = config.get("driver") or {}
    if driver:
        try:
            with open(driver["proc_version"]) as handle:
                module_version = parse_proc_version(handle.read())
        except OSError:
            module_version = None
        rc, out = runner([driver["nvidia_smi"], "--query-gpu=driver_version", "--format=csv,noheader"], timeout)
        userspace_version = parse_smi_version(rc, out)
        samples += driver_samples(module_version, userspace_version)
        if module_version and userspace_version and module_version != userspace_version:
            failures.append("driver: kernel module %s, user space %s (reboot pending?)"
                            % (module_version, userspace_version))

    fabric = config.get("fabric") or {}
    if fabric.get("ifname"):
        labels = {"ifname": fabric["ifname"]}
        mtu = read_mtu(fabric.get("sysfs_net", "/sys/class/net"), fabric["ifname"])
        samples.append(("sparkfleet_fabric_mtu", labels, mtu))
        samples.append(("sparkfleet_fabric_mtu_expected", labels, int(fabric["mtu"])))
        if mtu != int(fabric["mtu"]):
            failures.append("fabric %s: MTU %d, expected %d" % (fabric["ifname"], mtu, int(fabric["mtu"])))
        for peer in fabric.get("peers", []):
            rc, _out = runner(["ping", "-c", "1", "-W", "2", "-M", "do", "-s", str(fabric["ping_payload"]),
                               peer["address"]], timeout)
            samples.append(("sparkfleet_fabric_peer_reachable",
                            dict(labels, peer=peer["name"], address=peer["address"]), rc == 0))
            if rc != 0:
                failures.append("fabric: no jumbo don't-fragment ping reply from %s (%s)" % (peer["name"],
                                                                                             peer["address"]))

    kernel = config.get("kernel") or {}
    if kernel:
        try:
            with open(kernel.get("proc_osrelease", "/proc/sys/kernel/osrelease")) as handle:
                running = handle.read().strip()
        except OSError:
            running = os.uname().release
        upcoming = next_boot_kernel(kernel, running)
        rc, out = runner([kernel.get("modinfo", "modinfo"), "-k", upcoming, "-F", "version",
                          kernel.get("module", "nvidia")], timeout)
        version = out.strip().splitlines()[0].strip() if rc == 0 and out.strip() else None
        kernel_s, kernel_failures = kernel_samples(running, upcoming, version, kernel)
        samples += kernel_s
        failures += kernel_failures

    memory = config.get("memory") or {}
    if memory:
        meminfo = parse_meminfo(read_text(memory.get("meminfo", "/proc/meminfo")) or "")
        pressure = parse_pressure(read_text(memory.get("pressure", "/proc/pressure/memory")) or "")
        samples += memory_samples(meminfo, pressure)
        if "MemAvailable" not in meminfo:
            failures.append("memory: no MemAvailable in %s" % memory.get("meminfo", "/proc/meminfo"))

    if config.get("page_cache_file") and os.path.isfile(config["page_cache_file"]):
        try:
            with open(config["page_cache_file"]) as handle:
                state = json.load(handle)
            samples += page_cache_samples(state if isinstance(state, dict) else {})
        except (OSError, ValueError) as exc:
            failures.append("page cache: cannot read %s: %s" % (config["page_cache_file"], exc))

    if config.get("reboot_hold_file"):
        record = None
        if os.path.isfile(config["reboot_hold_file"]):
            try:
                with open(config["reboot_hold_file"]) as handle:
                    record = json.load(handle)
            except (OSError, ValueError) as exc:
                # unreadable: still a record that says not to reboot
                record = {}
                failures.append("reboot hold: cannot read %s: %s" % (config["reboot_hold_file"], exc))
        samples += reboot_hold_samples(record)

    if config.get("benchmark_file") and os.path.isfile(config["benchmark_file"]):
        try:
            with open(config["benchmark_file"]) as handle:
                samples += benchmark_samples(json.load(handle))
        except (OSError, ValueError) as exc:
            failures.append("benchmark: cannot read %s: %s" % (config["benchmark_file"], exc))
    return samples, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="/etc/sparkfleet/health/probe.json")
    args = parser.parse_args(argv)
    # systemd stops a run with SIGTERM: leave through SystemExit so no temporary file stays behind.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    started = time.monotonic()
    try:
        with open(args.config) as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        print("sparkfleet-health-probe: cannot read %s: %s" % (args.config, exc), file=sys.stderr)
        return 2
    samples, failures = collect(config)
    samples.append(("sparkfleet_health_probe_duration_seconds", {}, round(time.monotonic() - started, 3)))
    samples.append(("sparkfleet_health_probe_last_run_timestamp_seconds", {}, round(time.time(), 3)))
    try:
        write_atomically(config["textfile_dir"], config.get("textfile_name", "sparkfleet_health.prom"), render(samples))
    except (OSError, KeyError) as exc:
        print("sparkfleet-health-probe: cannot write the metrics: %s" % exc, file=sys.stderr)
        return 2
    for line in failures:
        print("FAILED " + line)
    print("sparkfleet-health-probe: %d metric(s), %d failed check(s)" % (len(samples), len(failures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
