#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Run one vllm bench serve on the host and return its result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_bench
short_description: Run one vllm bench serve against an endpoint and return the result file it saved
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
description:
  - Runs the argv (C(sparkfleet.gb10.benchmark_argv)) of one C(vllm bench serve) with the endpoint's API key in
    C(OPENAI_API_KEY) of that process only, never on a command line (Ansible's C(environment) keyword puts its
    values on the command line it runs, where C(ps) and sudo's log show them).
  - Removes the run's result file first, so a run that fails before saving leaves nothing old to be read; stops the
    run (its whole process group) when it takes longer than O(timeout), so no load is left on the endpoint.
  - Returns the saved result, and the error lines the run printed for failed requests (the pinned release prints
    up to ten, C(Error N:), and does not save them without C(--save-detailed)).
  - It loads the endpoint for as long as the run takes; like M(ansible.builtin.command) it is skipped in check mode.
options:
  argv:
    description: The argv of the run; it must save its result to O(result_file).
    type: list
    elements: str
    required: true
  result_file:
    description: Where the run saves its result (its C(--result-dir) and C(--result-filename)).
    type: path
    required: true
  api_key:
    description: The endpoint's API key; empty sends none.
    type: str
    default: ""
  env:
    description: Further environment of the run (no secrets).
    type: dict
    default: {}
  timeout:
    description: Seconds the run may take.
    type: int
    default: 1800
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Run one point of the sweep
  sparkfleet.gb10.vllm_bench:
    argv: "{{ endpoint | sparkfleet.gb10.benchmark_argv(vllm_bin, 4, settings, result_dir, store_dir) }}"
    result_file: "{{ result_dir }}/qwen3-c4.json"
    api_key: "{{ key }}"
"""

RETURN = r"""
result:
  description: The result file's JSON (the pinned release's keys; see C(sparkfleet.gb10.benchmark_point)).
  returned: success
  type: dict
errors:
  description: The error lines the run printed for its failed requests.
  returned: always
  type: list
  elements: str
elapsed:
  description: Seconds the run took, start of the program included.
  returned: always
  type: float
stdout_tail:
  description: The last lines the run printed.
  returned: always
  type: list
  elements: str
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.benchmark import KEY_VARIABLE
from ansible_collections.sparkfleet.gb10.plugins.module_utils.processes import run_in_session as run

ERROR_LINE = re.compile(r"^Error \d+: ")
TAIL = 30


def error_lines(text):
    """The release's lines for failed requests ('Error N: ...')."""
    return [line.strip() for line in (text or "").splitlines() if ERROR_LINE.match(line)]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            argv=dict(type="list", elements="str", required=True),
            result_file=dict(type="path", required=True),
            api_key=dict(type="str", default="", no_log=True),
            env=dict(type="dict", default={}),
            timeout=dict(type="int", default=1800),
        ),
        supports_check_mode=False,
    )
    p = module.params
    if os.path.lexists(p["result_file"]):
        os.unlink(p["result_file"])
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in p["env"].items()})
    env.pop(KEY_VARIABLE, None)
    if p["api_key"]:
        env[KEY_VARIABLE] = p["api_key"]
    rc, out, seconds = run(p["argv"], env, p["timeout"])
    tail = out.splitlines()[-TAIL:]
    common = dict(changed=False, errors=error_lines(out), elapsed=round(seconds, 1), stdout_tail=tail)
    if rc is None:
        module.fail_json(msg="%s: stopped after %d s (fleet_benchmark_run_timeout_sec)" % (p["argv"][0], p["timeout"]),
                         **common)
    if rc != 0:
        module.fail_json(msg="vllm bench serve exited %d: %s" % (rc, " | ".join(tail[-5:])), **common)
    try:
        with open(p["result_file"]) as handle:
            result = json.load(handle)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="vllm bench serve saved no readable result at %s: %s" % (p["result_file"], exc), **common)
    if not isinstance(result, dict):
        module.fail_json(msg="%s does not hold a JSON object" % p["result_file"], **common)
    module.exit_json(result=result, **common)


if __name__ == "__main__":
    main()
