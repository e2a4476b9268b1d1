# -*- coding: utf-8 -*-
"""roles/fleet_verify/tasks/endpoints.yml against a stand-in vLLM (a real HTTP server on 127.0.0.1): the task file
as verify runs it, with the role's defaults and an endpoint as the fleet plan gives it. An entry's
correctness_check picks the form (known answers from the rule book, or only the determinism ask), the verdict
lands in the endpoint's result, and an endpoint that answers fluent garbage with 200 fails verify."""

import http.server
import json
import os
import threading

import pytest

from ansible_local import REPO, local_playbook  # tests/unit/ansible_local.py
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

KNOWN = rulebook.setting("known_answers")
GARBAGE = " the harbour lights were dim and the ferry left late that evening"
with open(os.path.join(REPO, "tests", "fixtures", "vllm", "metrics-cpu-0.19.0-tiny.txt")) as _handle:
    METRICS = _handle.read()


def right(prompt):
    for item in KNOWN:
        if item["prompt"] == prompt:
            return " %s." % item["expect"][0]
    return " four five six"


class StandIn(http.server.BaseHTTPRequestHandler):
    """/v1/models, /v1/completions and /metrics of an endpoint without a key (api_key: none)."""

    served = "tiny-tp"
    answer = staticmethod(right)
    prompts = []

    def log_message(self, *_args):
        pass

    def _send(self, status, data, kind="application/json"):
        data = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": self.served, "object": "model"}]})
        if self.path == "/metrics":
            return self._send(200, METRICS.encode(), "text/plain; version=0.0.4")
        return self._send(404, {"error": "Not Found"})

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions" or body.get("model") != self.served:
            return self._send(404, {"error": "Not Found"})
        StandIn.prompts.append(body["prompt"])
        text = StandIn.answer(body["prompt"])
        tokens = min(body["max_tokens"], len(text.split()))
        return self._send(200, {"object": "text_completion", "model": self.served,
                                "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                                "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}})


@pytest.fixture()
def port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    StandIn.prompts = []
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    StandIn.answer = staticmethod(right)


PLAY = """
- hosts: localhost
  gather_facts: false
  vars_files: [%(defaults)s]
  vars:
    # As roles/fleet_verify/vars/main.yml gives them from the fleet plan: the entry as written, with the API's
    # port, served name and call address; no key (api_key: none), so vllm_service's key files are not read.
    _fleet_verify_endpoints: %(endpoints)s
    _vllm_service_api_keys: {}
  tasks:
    - name: The endpoint gates of fleet_verify
      ansible.builtin.include_tasks: %(tasks)s

    - name: Keep what verify kept
      ansible.builtin.copy:
        content: "{{ fleet_verify_endpoint_results | to_json }}"
        dest: %(out)s
        mode: "0600"
"""


def _verify(tmp_path, port, **entry):
    endpoint = dict({"name": "tiny-tp", "model": "/opt/models/tiny-llama", "checkpoint_format": "bf16",
                     "api_key": "none", "api_key_optout_reason": "a test", "port": port, "served_name": "tiny-tp",
                     "call_address": "127.0.0.1"}, **entry)
    out = tmp_path / "results.json"
    play = PLAY % {"defaults": json.dumps(os.path.join(REPO, "roles", "fleet_verify", "defaults", "main.yml")),
                   "endpoints": json.dumps([endpoint]), "out": json.dumps(str(out)),
                   "tasks": json.dumps(os.path.join(REPO, "roles", "fleet_verify", "tasks", "endpoints.yml"))}
    proc = local_playbook(tmp_path, play)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_an_entry_asks_the_known_answers_and_keeps_the_verdict(tmp_path, port):
    proc, results = _verify(tmp_path, port)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert [r["correctness"] for r in results] == ["answers %d/%d" % (len(KNOWN), len(KNOWN))]
    determinism = rulebook.setting("determinism_prompt")
    assert [item["prompt"] for item in KNOWN] + [determinism, determinism] == StandIn.prompts[1:]


def test_an_entry_with_the_check_off_gets_only_the_determinism_ask(tmp_path, port):
    StandIn.answer = staticmethod(lambda prompt: GARBAGE)
    proc, results = _verify(tmp_path, port, correctness_check=False, correctness_check_off_reason="random weights")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert [r["correctness"] for r in results] == ["same twice"]
    assert not set(item["prompt"] for item in KNOWN) & set(StandIn.prompts[1:])


def test_fluent_garbage_with_200_fails_verify(tmp_path, port):
    StandIn.answer = staticmethod(lambda prompt: GARBAGE)
    proc, results = _verify(tmp_path, port)
    assert proc.returncode != 0 and results is None
    assert "answered 0 of %d known-answer prompts right" % len(KNOWN) in proc.stdout, proc.stdout[-4000:]
