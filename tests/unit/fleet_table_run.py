# -*- coding: utf-8 -*-
"""The fleet_table callback fed task results through Ansible's own TaskResult, what it prints kept as lines (shared
by the tests of tests/unit/plugins/callback)."""

from ansible.executor.task_result import CallbackTaskResult
from ansible.inventory.host import Host
from ansible.playbook.task import Task

from ansible_collections.sparkfleet.gb10.plugins.callback import fleet_table


class Screen:
    """Ansible's display as the callback uses it: each line kept, a banner as ``== <title>``."""

    def __init__(self):
        self.lines = []

    def display(self, msg, **_kwargs):
        self.lines.append(msg)

    def banner(self, msg, **_kwargs):
        self.lines.append("== " + msg)


def task_result(host, task_name, result):
    """The result of the task named ``task_name`` on ``host``, as the strategy hands it to a callback."""
    task = Task()
    task.name = task_name
    return CallbackTaskResult(Host(host), task, result, {"name": task_name})


def printed(ok=(), failed=(), ignored=()):
    """The lines the callback prints at the end of a run whose tasks gave ``ok`` and ``failed`` results, and failed
    where they ignore errors (``ignored``); each a (host, task name, result)."""
    callback = fleet_table.CallbackModule()
    callback._display = Screen()
    for entry in ok:
        callback.v2_runner_on_ok(task_result(*entry))
    for entry in failed:
        callback.v2_runner_on_failed(task_result(*entry))
    for entry in ignored:
        callback.v2_runner_on_failed(task_result(*entry), ignore_errors=True)
    callback.v2_playbook_on_stats(None)
    return callback._display.lines
