# -*- coding: utf-8 -*-
"""roles/fleet_verify/tasks/endpoints.yml against a stand-in vLLM (a real HTTP server on 127.0.0.1): the task file
as verify runs it, with the role's defaults and an endpoint as the fleet plan gives it. An entry's
correctness_check picks the form (known answers from the rule book, or only the determinism ask), the verdict
lands in the endpoint's result, and an endpoint that answers fluent garbage with 200 fails verify. Every endpoint
of the host is checked in one call (sparkfleet.gb10.vllm_verify), and its result keeps the shape the summary reads."""

import json
import os

import pytest

from ansible_local import REPO, local_playbook  # tests/unit/ansible_local.py
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

KNOWN = rulebook.setting("known_answers")
GARBAGE = " the harbour lights were dim and the ferry left late that evening"


def right(prompt):
    for item in KNOWN:
        if item["prompt"] == prompt:
            return " %s." % item["expect"][0]
    return " four five six"


@pytest.fixture()
def answering(serve_vllm):
    """answering(answer=right) -> the handler of a stand-in vLLM without a key (tests/unit/fake_vllm.py), its
    /v1/models, /metrics (the recording) and /v1/completions, answered with the text ``answer(prompt)`` gives."""

    def start(answer=right):
        return serve_vllm(complete=lambda body, nth: answer(body["prompt"]))[0]
    return start


PLAY = """
- hosts: localhost
  gather_facts: false
  vars_files: [%(defaults)s]
  vars:
    # As roles/fleet_verify/vars/main.yml gives them from the fleet plan: the entry as written, with the API's
    # port, served name and call address; the keys as vllm_service's tasks/api_keys.yml reads them (none: an
    # entry with api_key: none), so vllm_service's key files are not read.
    _fleet_verify_endpoints: %(endpoints)s
    _vllm_service_api_keys: %(keys)s
  tasks:
    - name: The endpoint gates of fleet_verify
      ansible.builtin.include_tasks: %(tasks)s

    - name: Keep what verify kept
      ansible.builtin.copy:
        content: "{{ fleet_verify_endpoint_results | to_json }}"
        dest: %(out)s
        mode: "0600"
"""


def _entry(port, **entry):
    return dict({"name": "tiny-tp", "model": "/opt/models/tiny-llama", "checkpoint_format": "bf16",
                 "api_key": "none", "api_key_optout_reason": "a test", "port": port, "served_name": "tiny-tp",
                 "call_address": "127.0.0.1"}, **entry)


def _verify(tmp_path, port, keys=None, more=(), **entry):
    out = tmp_path / "results.json"
    play = PLAY % {"defaults": json.dumps(os.path.join(REPO, "roles", "fleet_verify", "defaults", "main.yml")),
                   "endpoints": json.dumps([_entry(port, **entry)] + list(more)), "out": json.dumps(str(out)),
                   "keys": json.dumps(keys or {}),
                   "tasks": json.dumps(os.path.join(REPO, "roles", "fleet_verify", "tasks", "endpoints.yml"))}
    proc = local_playbook(tmp_path, play)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_an_entry_asks_the_known_answers_and_keeps_the_verdict(tmp_path, answering):
    vllm = answering()
    proc, results = _verify(tmp_path, vllm.port)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert [r["correctness"] for r in results] == ["answers %d/%d" % (len(KNOWN), len(KNOWN))]
    determinism = rulebook.setting("determinism_prompt")
    assert [item["prompt"] for item in KNOWN] + [determinism, determinism] == [r["prompt"] for r in vllm.requests][1:]


def test_an_entry_with_the_check_off_gets_only_the_determinism_ask(tmp_path, answering):
    vllm = answering(lambda prompt: GARBAGE)
    proc, results = _verify(tmp_path, vllm.port, correctness_check=False, correctness_check_off_reason="random weights")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert [r["correctness"] for r in results] == ["same twice"]
    assert not set(item["prompt"] for item in KNOWN) & set(r["prompt"] for r in vllm.requests[1:])


def test_fluent_garbage_with_200_fails_verify(tmp_path, answering):
    proc, results = _verify(tmp_path, answering(lambda prompt: GARBAGE).port)
    assert proc.returncode != 0 and results is None
    assert "answered 0 of %d known-answer prompts right" % len(KNOWN) in proc.stdout, proc.stdout[-4000:]


KEY = "sk-fleet-verify-not-for-printing"


def test_every_endpoint_of_the_host_is_verified_in_one_call_and_keeps_the_shape_of_its_result(tmp_path, serve_vllm):
    """Two endpoints, one with a key behind vllm_service's guard: one task (sparkfleet.gb10.vllm_verify) checks
    both, and fleet_verify_endpoint_results keeps what playbooks/summary.yml and the fleet table read."""
    keyed = serve_vllm("keyed", key=KEY, guard=True, complete=lambda body, nth: right(body["prompt"]))[0]
    coder = serve_vllm("coder", served="coder", complete=lambda body, nth: right(body["prompt"]))[0]
    proc, results = _verify(tmp_path, keyed.port, keys={"tiny-tp": KEY},
                            more=[_entry(coder.port, name="coder", served_name="coder")])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert KEY not in proc.stdout
    assert keyed.log.count(("keyed", "refused")) == 3 and ("coder", "refused") not in coder.log
    verdict = "answers %d/%d" % (len(KNOWN), len(KNOWN))
    for result, port in zip(results, (keyed.port, coder.port)):
        assert result == {"port": port, "sample": "Paris.", "completion_tokens": 1,
                          "completion_seconds": result["completion_seconds"],
                          "tokens_per_second": result["tokens_per_second"], "correctness": verdict,
                          "prefix_cache_hits": 128.0, "prefix_cache_queries": 427.0,
                          "prefix_cache_hit_rate": round(128.0 / 427.0, 3), "kv_cache_usage": 0.0,
                          "name": result["name"]}
        assert result["completion_seconds"] > 0 and result["tokens_per_second"] > 0
    assert [r["name"] for r in results] == ["tiny-tp", "coder"]


def test_a_keyed_endpoint_that_serves_without_its_key_fails_verify_naming_it(tmp_path, serve_vllm):
    vllm = serve_vllm("open", complete=lambda body, nth: right(body["prompt"]))[0]
    proc, results = _verify(tmp_path, vllm.port, keys={"tiny-tp": KEY})
    assert proc.returncode != 0 and results is None
    assert "tiny-tp:%d: served without its key: /v1/models answered 200, expected 401" % vllm.port in proc.stdout
    assert KEY not in proc.stdout
