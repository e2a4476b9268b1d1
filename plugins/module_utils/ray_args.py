# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What ``ray start`` is started with on a head or a worker: its argv and the environment of every Ray process
of the node. Pure Python behind the filters ``ray_args`` and ``ray_env`` (plugins/filter/ray_args.py), which the
ray role renders their units and environment files from; the contract tests check every
rendered argv against the pinned Ray's own ``ray start`` options.

Why the environment holds what it holds (the rule book has the reasons): token authentication with the token in
a root-only file; ``VLLM_HOST_IP`` = the fabric address, so vLLM and Ray agree on the node's address; Ray's
memory monitor off (on unified memory the GPU's weights count as system memory and the monitor would kill the
workers); usage statistics off; the NCCL/Gloo/UCX environment of the host (``nccl_env``), which the ray
executor's GPU workers inherit; then the inventory's own environment, which wins.
"""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction, rulebook

# Each port of a Ray port map and the ``ray start`` option that sets it, in the order the argv gives them.
# A worker sets all but the head's own (GCS, client server, dashboard).
PORT_FLAGS = (
    ("gcs", "--port"),
    ("node_manager", "--node-manager-port"),
    ("object_manager", "--object-manager-port"),
    ("runtime_env_agent", "--runtime-env-agent-port"),
    ("dashboard_agent_grpc", "--dashboard-agent-grpc-port"),
    ("dashboard_agent_listen", "--dashboard-agent-listen-port"),
    ("metrics_export", "--metrics-export-port"),
    ("ray_client_server", "--ray-client-server-port"),
    ("min_worker", "--min-worker-port"),
    ("max_worker", "--max-worker-port"),
)
HEAD_ONLY_PORTS = ("gcs", "ray_client_server", "dashboard")
ROLES = ("head", "worker")


# The other options ray_args sets, each with the variable (or fact) that sets it: ray_extra_args may not repeat one.
MANAGED_FLAGS = dict([(flag, ("ray_head_ports.%s" % key) if key in HEAD_ONLY_PORTS else
                       "ray_head_ports.%s / ray_worker_ports.%s" % (key, key)) for key, flag in PORT_FLAGS] + [
    ("--head", "the fleet plan (group ray_head)"), ("--block", "the unit (ray start stays in the foreground)"),
    ("--address", "ray_worker_head_host (the fleet plan's head)"), ("--node-ip-address", "ray_node_ip"),
    ("--include-dashboard", "ray_head_include_dashboard"), ("--dashboard-host", "ray_head_dashboard_host"),
    ("--dashboard-port", "ray_head_ports.dashboard"), ("--num-gpus", "ray_num_gpus"),
    ("--disable-usage-stats", "the rule book (usage statistics stay off)"), ("--num-cpus", "ray_num_cpus"),
    ("--object-store-memory", "ray_object_store_memory")])


def extra_args_problems(extra):
    """What ``ray start`` would make of ``ray_extra_args`` (``(problem, fix)`` pairs). Its options are click's:
    an item is one token, so ``"--num-cpus 4"`` is one unknown option name; click does not read an underscore as a
    dash (``--num_cpus`` is no option); and an option the collection sets from a variable may not come twice."""
    found = []
    if not isinstance(extra, (list, tuple)) or not all(isinstance(item, str) for item in extra):
        return [("must be a list of strings, one argv item each", "write e.g. ['--resources', '{\"x\": 1}']")]
    for item in extra:
        name = item.split("=", 1)[0]
        if not name.startswith("--"):
            continue  # a value of the option before it
        words = item.split(None, 1)
        # One finding an item: what ray start would do with it first.
        option = words[0].split("=", 1)[0].replace("_", "-")
        if option in MANAGED_FLAGS:
            found.append(("has %s, which the collection sets itself" % option, "set %s instead" % MANAGED_FLAGS[option]))
        elif redaction.names_secret(option):
            found.append(("has %s: a secret on the command line is visible in ps and in the Ray unit file, which every "
                          "account reads" % option, "drop it; the cluster's own token is made by the ray role and "
                          "kept root-only (ray_auth_token_file)"))
        elif len(words) > 1 and "=" not in words[0] and any(c.isspace() for c in name):
            found.append(("has %r as one item: ray start reads the whole string as one option name and refuses it"
                          % item, "write the option and its value as two items (%s), or as %s=%s"
                          % (", ".join(repr(w) for w in words), words[0].replace("_", "-"), words[1])))
        elif "_" in name:
            found.append(("has %s: ray start's options are spelt with dashes (click reads no underscore as one), "
                          "so it stops with 'No such option'" % name, "write %s" % name.replace("_", "-")))
    return found


class RayArgsError(ValueError):
    """An input ``ray start`` cannot be given (the filter raises it as AnsibleFilterError)."""


def _bool_text(value):
    return "true" if value else "false"


def ray_args(role, ray_bin, node_ip, ports, num_gpus, num_cpus=0, object_store_memory=0, extra_args=(),
             head_address=None, include_dashboard=True, dashboard_host="127.0.0.1"):
    """The argv of ``ray start --block`` for a ``head`` or a ``worker`` (which joins ``head_address``,
    ``ip:port``). ``ports``: the role's port map (every key of PORT_FLAGS the role sets, ``dashboard`` on a
    head). ``num_cpus`` and ``object_store_memory`` of 0 leave the choice to Ray."""
    if role not in ROLES:
        raise RayArgsError("ray_args: role must be one of %s, got %r" % (", ".join(ROLES), role))
    wanted = [key for key, _flag in PORT_FLAGS if role == "head" or key not in HEAD_ONLY_PORTS]
    missing = [key for key in wanted + (["dashboard"] if role == "head" else []) if key not in (ports or {})]
    if missing:
        raise RayArgsError("ray_args: the %s's port map lacks %s" % (role, ", ".join(missing)))
    if role == "worker" and not head_address:
        raise RayArgsError("ray_args: a worker needs the head's address (ip:port)")
    argv = [ray_bin, "start"] + (["--head", "--block"] if role == "head" else ["--block", "--address=%s" % head_address])
    argv.append("--node-ip-address=%s" % node_ip)
    argv += ["%s=%s" % (flag, ports[key]) for key, flag in PORT_FLAGS if key in wanted]
    if role == "head":
        argv += ["--include-dashboard=%s" % _bool_text(include_dashboard), "--dashboard-host=%s" % dashboard_host,
                 "--dashboard-port=%s" % ports["dashboard"]]
    argv += ["--num-gpus=%s" % num_gpus, "--disable-usage-stats"]
    if int(num_cpus or 0) > 0:
        argv.append("--num-cpus=%s" % num_cpus)
    if int(object_store_memory or 0) > 0:
        argv.append("--object-store-memory=%s" % object_store_memory)
    return argv + list(extra_args or [])


def ray_env(node_ip, user, auth_token_file, nccl_env=None, environment=None):
    """The environment of every Ray process of the node: token auth, ``VLLM_HOST_IP``, the rule book's memory
    monitor settings (``ray_memory_monitor_refresh_ms``, ``ray_memory_usage_threshold``), usage statistics off,
    the service account's home, then the host's NCCL environment, then ``environment`` (wins)."""
    env = {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": auth_token_file,
        "VLLM_HOST_IP": node_ip,
        "RAY_memory_monitor_refresh_ms": str(rulebook.setting("ray_memory_monitor_refresh_ms")),
        "RAY_memory_usage_threshold": str(rulebook.setting("ray_memory_usage_threshold")),
        "RAY_USAGE_STATS_ENABLED": "0",
        "HOME": "/var/lib/%s" % user,
    }
    env.update(nccl_env or {})
    env.update(environment or {})
    return env
