# -*- coding: utf-8 -*-
# Apache-2.0
"""A heartbeat line while a long task runs (NCCL build, venv install, vLLM start)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: notification
short_description: Says which long task is still running, on which hosts, and for how long
version_added: "0.1.0"
description:
  - Ansible prints nothing while a task runs. The NCCL build, the virtualenv install and the wait for a
    large model to load take minutes on a Spark, and silence for ten minutes reads as a hang.
  - "While a task has hosts that have not answered yet, this callback prints one line every
    O(interval) seconds, starting after the first interval, for example
    C(... still running after 4m00s: Build NCCL v2.28.9-1 for sm_121 [spark-1, spark-2]).
    Nothing is printed for tasks that finish within the interval, so a no-op run looks as before."
  - Enabled in the collection's C(ansible.cfg) (C(callbacks_enabled)).
requirements:
  - enable in ansible.cfg (callbacks_enabled)
options:
  interval:
    description: Seconds between two lines for the same task (and before the first one).
    type: float
    default: 60
    env:
      - name: SPARKFLEET_PROGRESS_INTERVAL
    ini:
      - section: sparkfleet_progress
        key: interval
"""

import threading
import time

from ansible.plugins.callback import CallbackBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction


def elapsed_text(seconds):
    """'45s', '4m05s', '1h02m03s'."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%02ds" % (minutes, secs)
    return "%ds" % secs


def heartbeat_line(task_name, started, now, pending):
    """The line for a task still running on ``pending`` hosts, or None when none is pending."""
    if not pending:
        return None
    # A task's name may be templated from the inventory: shown through the collection's one redaction.
    return redaction.redact_text("... still running after %s: %s [%s]" % (
        elapsed_text(now - started), task_name, ", ".join(sorted(pending))))


class Tracker(object):
    """Which task runs since when, and which hosts it still waits for (thread-safe)."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._task = None
        self._started = None
        self._pending = set()

    def start_task(self, name):
        with self._lock:
            self._task = name
            self._started = self._clock()
            self._pending = set()

    def start_host(self, host):
        with self._lock:
            self._pending.add(host)

    def end_host(self, host):
        with self._lock:
            self._pending.discard(host)

    def stop(self):
        with self._lock:
            self._task = None
            self._pending = set()

    def line(self, min_elapsed=0.0):
        """The heartbeat line, once the task has run for ``min_elapsed`` seconds; else None."""
        with self._lock:
            if self._task is None:
                return None
            now = self._clock()
            if now - self._started < min_elapsed:
                return None
            return heartbeat_line(self._task, self._started, now, self._pending)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "sparkfleet.gb10.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tracker = Tracker()
        self._stop = threading.Event()
        self._thread = None
        self._interval = 60.0

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._interval = float(self.get_option("interval"))

    def _beat(self):
        while not self._stop.wait(self._interval):
            line = self.tracker.line(min_elapsed=self._interval)
            if line:
                self._display.display(line)

    def _ensure_thread(self):
        if self._thread is None and self._interval > 0:
            self._thread = threading.Thread(target=self._beat, name="sparkfleet-progress", daemon=True)
            self._thread.start()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.tracker.start_task(task.get_name().strip())
        self._ensure_thread()

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_runner_on_start(self, host, task):
        self.tracker.start_host(host.get_name())

    def _end(self, result):
        self.tracker.end_host(result._host.get_name())

    def v2_runner_on_ok(self, result):
        self._end(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._end(result)

    def v2_runner_on_skipped(self, result):
        self._end(result)

    def v2_runner_on_unreachable(self, result):
        self._end(result)

    def v2_playbook_on_stats(self, stats):
        self.tracker.stop()
        self._stop.set()
