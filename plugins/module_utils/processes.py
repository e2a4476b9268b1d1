# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Child processes that AnsibleModule.run_command cannot run.

run_command starts one command and waits for its end, with no timeout. Two
modules need more: ``fabric_ping`` starts every peer's ping at once and collects
them after (the check takes the slowest ping, not the sum), and ``vllm_bench``
runs the benchmark in its own session so that a timeout stops its whole process
group. Everything else runs through run_command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time


def start(argv, env):
    """Start ``argv`` with stdout and stderr piped as text; collect it with ``communicate()``."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)


def run_in_session(argv, env, timeout):
    """(rc, output, seconds) of argv in its own process group; rc None when it was stopped at the timeout."""
    start_time = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    try:
        out, _err = process.communicate(timeout=timeout)
        rc = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            out, _err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, _err = process.communicate()
        rc = None
    return rc, out.decode("utf-8", "replace"), time.monotonic() - start_time
