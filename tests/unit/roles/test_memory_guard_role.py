# -*- coding: utf-8 -*-
"""sparkfleet.gb10.memory_guard (its defaults against its argument_specs: test_role_specs.py): its thresholds and
patterns are the rule book's, and the settings file hands earlyoom exactly those arguments through systemd's EnvironmentFile= and $EARLYOOM_ARGS."""

import os
import re
import shlex

import yaml

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(REPO, "roles", "memory_guard")
INVENTORY = os.path.join(REPO, "inventories", "two-spark")
FILES = ["memory_guard/defaults/main.yml", "memory_guard/vars/main.yml"]
RULED = {"memory_guard_term_percent": "memory_guard_term_percent",
         "memory_guard_kill_percent": "memory_guard_kill_percent",
         "memory_guard_swap_percent": "memory_guard_swap_percent",
         "memory_guard_prefer": "memory_guard_prefer", "memory_guard_avoid": "memory_guard_avoid"}


def _load(path):
    with open(os.path.join(ROLE, path)) as handle:
        return yaml.safe_load(handle)


def test_the_thresholds_and_patterns_are_read_from_the_rule_book():
    defaults = _load("defaults/main.yml")
    for variable, key in RULED.items():
        assert defaults[variable] == "{{ lookup('sparkfleet.gb10.rulebook', '%s') }}" % key


def _environment_file_value(text, name):
    """The value systemd's EnvironmentFile= gives NAME for a double-quoted assignment (backslash escapes)."""
    for line in text.splitlines():
        if line.startswith(name + '="') and line.endswith('"'):
            return re.sub(r'\\(.)', r'\1', line[len(name) + 2:-1])
    raise AssertionError("no %s=\"...\" line in %r" % (name, text))


def test_earlyoom_gets_the_rule_books_arguments(render_role_vars):
    template = os.path.join(ROLE, "templates", "earlyoom.default.j2")
    seen = render_role_vars(INVENTORY, FILES, "{'args': _memory_guard_args, 'file': lookup('ansible.builtin.template', "
                            "'%s')}" % template, hosts="spark-1")["spark-1"]
    expected = ["-m", "%s,%s" % (rulebook.setting("memory_guard_term_percent"),
                                 rulebook.setting("memory_guard_kill_percent")),
                "-s", "%s,%s" % ((rulebook.setting("memory_guard_swap_percent"),) * 2),
                "-r", "3600",
                "--prefer", rulebook.setting("memory_guard_prefer"),
                "--avoid", rulebook.setting("memory_guard_avoid")]
    assert seen["args"] == expected
    # systemd splits $EARLYOOM_ARGS at whitespace and removes the quotes (as shlex does for these words).
    assert shlex.split(_environment_file_value(seen["file"], "EARLYOOM_ARGS")) == expected


def test_the_patterns_pick_vllm_and_ray_workers_and_spare_sshd():
    prefer, avoid = rulebook.setting("memory_guard_prefer"), rulebook.setting("memory_guard_avoid")
    # /proc/PID/comm names seen on the simulated fleet (vLLM 0.19 CPU, Ray 2.60), at most 15 characters.
    for name in ("vllm", "VLLM::EngineCor", "VLLM::Worker_TP", "ray::RayWorkerW"):
        assert re.search(prefer, name) and not re.search(avoid, name), name
    for name in ("sshd", "sshd-session", "systemd", "systemd-journal", "systemd-logind", "dbus-daemon", "earlyoom",
                 "prometheus-node"):
        assert re.search(avoid, name) and not re.search(prefer, name), name
    # Ray's agents and idle workers hold no GPU memory: killing them first would free nothing.
    for name in ("python3", "bash", "raylet", "gcs_server", "ray", "vllm-headwatch", "ray::IDLE", "ray::DashboardA",
                 "ray::RuntimeEnv"):
        assert not re.search(prefer, name) and not re.search(avoid, name), name
