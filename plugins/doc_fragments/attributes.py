# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The standard attributes of the collection's modules, described once (the descriptions here are ansible-core's own
words for them), and the support of the kinds of module the collection has, said once for each kind.

A module extends ``sparkfleet.gb10.attributes`` (the descriptions) and, where it is of a kind below, the kind's
fragment, for example ``sparkfleet.gb10.attributes.probe``; a module of no kind says its own support. A module's
own keys win over a fragment's (ansible-core merges an attribute's keys, the module's first), so a module may still
describe an attribute its own way. READ_ONLY alone is whole (its own descriptions of check_mode and idempotent):
a module of that kind extends it alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):  # pylint: disable=too-few-public-methods

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
"""

    # Changes nothing, but does the real thing on the host to find out (a model generates, a benchmark loads an
    # endpoint, a probe loads the GPU's libraries): like ansible.builtin.uri and ansible.builtin.command it is skipped
    # in check mode. vllm_bench, vllm_completion, vllm_correctness, vllm_ready, vllm_verify, gpu_gate.
    PROBE = r"""
options: {}
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  idempotent:
    support: full
"""

    # Runs in check mode, predicting what it would change, and shows no diff. fabric_ping, benchmark_report,
    # fleet_preflight.
    NO_DIFF = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
"""

    # Writes files, in check mode too as a prediction, each change shown as a diff. host_files, vllm_sm121_patch.
    FILES = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
"""

    # Reads the host and nothing else: whole, extended alone. host_read, start_inputs.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    description: Reads only; the same answer as a real run.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  idempotent:
    description: Never changes anything.
    support: full
"""
