#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""The endpoint gate of fleet_verify on the host, in one call: every vLLM endpoint of a list at once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_verify
short_description: Verify every vLLM endpoint of a host at once, in one call (keys, model, completion, answers, metrics)
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
  - sparkfleet.gb10.vllm_correctness
description:
  - For every endpoint at the same time (one thread each), on the host, the checks of the role fleet_verify, one
    after the other per endpoint; what makes a model generate (the timed completion and the correctness gate) runs
    for one endpoint of the host at a time, so that one endpoint's tokens per second are not measured while
    another model generates on the same GPU.
  - Without a key, C(GET /v1/models) answers 401 for an endpoint with a key (O(endpoints[].keyed)) and
    200 for one that opted out of it (its entry's C(api_key) is C(none)). A keyed endpoint whose key is empty
    (a key file without a key) fails, since it would serve anyone.
  - With O(api_guard), an endpoint with a key also refuses C(POST /invocations) and C(POST /tokenize) without it
    (401); vLLM itself guards only the paths under C(/v1), the guard of sparkfleet.gb10.vllm_service the rest.
  - With its key, C(GET /v1/models) answers 200 listing O(endpoints[].model).
  - One timed completion (O(prompt), O(max_tokens), temperature 0) answers 200 with completion tokens; its text, tokens,
    seconds and tokens per second (completion tokens over the request's wall time, prefill and HTTP included)
    are returned, as M(sparkfleet.gb10.vllm_completion) measures them.
  - The correctness gate of M(sparkfleet.gb10.vllm_correctness) (the same code) asks the known answers, unless the
    endpoint turned them off (O(endpoints[].correctness_check)), then O(determinism_prompt) twice.
  - C(GET /metrics), read as the filter C(sparkfleet.gb10.vllm_metrics) reads it (the same code), gives the
    prefix-cache counters and hit rate, the KV-cache usage.
  - The refusals without a key are all checked; the other checks stop an endpoint at its first failure (an
    endpoint that does not list its model cannot answer a completion).
  - One module call per host however many endpoints it serves, where looped tasks cost one round trip per check
    and endpoint.
  - The requests that make no model generate (the refusals, the model list, C(/metrics)) wait at most 30 s (or
    O(timeout) when shorter), as M(ansible.builtin.uri) did for them, so a hung API server fails soon.
  - Fails naming each endpoint that failed (name:port) and what failed. The keys are never returned.
  - Read-only on the host (it makes the models generate, and changes nothing); like M(ansible.builtin.uri) it is
    skipped in check mode unless its task turns that off (C(check_mode) false), as the role fleet_verify's does.
options:
  endpoints:
    description: The endpoints to verify.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: What the result and the failure call the endpoint, for example its model entry's name.
        type: str
        required: true
      url:
        description: The endpoint's base URL, for example C(http://127.0.0.1:8000) (no trailing path).
        type: str
        required: true
      model:
        description: The served model name, which C(/v1/models) must list and the completions ask for.
        type: str
        required: true
      api_key:
        description:
          - "The endpoint's API key, sent as C(Authorization: Bearer); empty for an endpoint without one."
        type: str
        default: ""
      keyed:
        description:
          - Whether the endpoint has a key (sparkfleet.gb10.vllm_service made one or was given one) and so must refuse
            requests without it; false for an entry that opted out (C(api_key) C(none)), which must answer without
            one. Unset, an endpoint is keyed when O(endpoints[].api_key) is not empty.
          - Keyed with an empty O(endpoints[].api_key) fails the endpoint.
        type: bool
      correctness_check:
        description: Whether the known answers are asked (false for a model that cannot know them, random test weights).
        type: bool
        default: true
  api_guard:
    description: Whether an endpoint with a key must refuse C(POST /invocations) and C(POST /tokenize) without it.
    type: bool
    default: true
  prompt:
    description: The prompt of the timed completion.
    type: str
    required: true
  max_tokens:
    description: max_tokens of the timed completion (reasoning models need enough to get past their thinking).
    type: int
    default: 16
  timeout:
    description: Seconds to wait for each answer of a generating request (30 s at most for the others).
    type: int
    default: 600
  known_answers_max_tokens:
    description: max_tokens of each known-answer ask (rule book setting C(known_answers_max_tokens)).
    type: int
    default: 16
notes:
  - The endpoints are asked at the same time, but each endpoint's asks one after the other, and the generating
    asks of one endpoint at a time, so the determinism ask of one endpoint is not batched with the others' requests
    and the tokens per second are those of one model generating alone.
seealso:
  - module: sparkfleet.gb10.vllm_completion
  - module: sparkfleet.gb10.vllm_correctness
  - module: sparkfleet.gb10.vllm_ready
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Verify every API this host serves, with the rule book's prompts
  sparkfleet.gb10.vllm_verify:
    endpoints:
      - name: tiny
        url: http://127.0.0.1:8000
        model: tiny-tp
        api_key: "{{ vllm_service_api_key }}"
        correctness_check: false
      - name: coder
        url: http://127.0.0.1:8001
        model: coder
    prompt: The capital of France is
    max_tokens: 512
    known_answers: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers') }}"
    min_correct: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_min_correct') }}"
    known_answers_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_max_tokens') }}"
    determinism_prompt: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_prompt') }}"
    determinism_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_max_tokens') }}"
  register: verified
"""

RETURN = r"""
endpoints:
  description: One entry per endpoint, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The endpoint's O(endpoints[].name).
      type: str
      sample: tiny
    url:
      description: The endpoint's O(endpoints[].url).
      type: str
      sample: http://127.0.0.1:8000
    port:
      description: The port of O(endpoints[].url).
      type: int
      sample: 8000
    ok:
      description: Whether every check passed.
      type: bool
      sample: true
    problems:
      description: What failed, one item a check (empty when all passed).
      type: list
      elements: str
      sample: ["served without its key: /v1/models answered 200, expected 401"]
    text:
      description: The text of the timed completion's first choice (empty when it was not asked or had none).
      type: str
      sample: " Paris. It is"
    completion_tokens:
      description: usage.completion_tokens of the timed completion (0 when it had none).
      type: int
      sample: 16
    elapsed:
      description: Seconds from sending the timed completion to having read its answer.
      type: float
      sample: 0.412
    tokens_per_second:
      description: completion_tokens / elapsed, rounded to 0.1 (0.0 when either is missing).
      type: float
      sample: 38.8
    correctness:
      description:
        - The result of the correctness gate, as M(sparkfleet.gb10.vllm_correctness) returns it (form, answers,
          correct, min_correct, deterministic, determinism, summary); empty when it was not reached.
      type: dict
      sample: {form: determinism, summary: same twice, deterministic: true}
    metrics:
      description:
        - The figures of C(/metrics) as the filter C(sparkfleet.gb10.vllm_metrics) gives them
          (prefix_cache_hits, prefix_cache_queries, prefix_cache_hit_rate, kv_cache_usage, requests_running,
          requests_waiting; each null when the server does not expose it); empty when it was not reached.
      type: dict
      sample: {prefix_cache_hits: 128.0, prefix_cache_queries: 364.0, prefix_cache_hit_rate: 0.352}
"""

import json
import threading

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.parse import urlparse
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import (
    at_once, below_one, endpoints_option, excerpt, key_headers, request, timed_completion)
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_correctness import asker, check_inputs, gate, gate_options
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_metrics import figures

# The routes sparkfleet.gb10.vllm_service's guard keeps behind the key beside vLLM's own /v1 (POST, body {}).
GUARDED_ROUTES = ("/invocations", "/tokenize")
# Seconds the requests that make no model generate wait at most (the looped uri tasks this module replaced waited 30).
QUICK_TIMEOUT = 30


def port_of(url):
    """The port of ``url`` (80 or 443 when it names none), None when it has none to give."""
    try:
        parsed = urlparse(url)
        return parsed.port or {"http": 80, "https": 443}.get(parsed.scheme)
    except ValueError:
        return None


def answered(status, error, body=""):
    """How a message tells what came back: the status (and the start of the body), or why nothing came."""
    if status == -1:
        return "no answer (%s)" % (error or "no reason given")
    shown = excerpt(body, 120)
    return "answered %d%s" % (status, ", body: %s" % shown if shown else "")


def refusal_problem(route, expected, status, error, body):
    """The problem with what ``route`` answered without a key (None when it answered ``expected``)."""
    if status == expected:
        return None
    if expected == 401 and 200 <= status < 300:
        return "served without its key: %s answered %d, expected 401" % (route, status)
    if expected == 401:
        return "without its key %s %s, expected 401" % (route, answered(status, error, body))
    return "without a key (the entry opted out of one) %s %s, expected 200" % (route, answered(status, error, body))


def check_refusals(url, has_key, api_guard, timeout):
    """The problems of the routes asked without a key: /v1/models (401 with a key, 200 without), and with
    ``api_guard`` the routes of GUARDED_ROUTES (401) of an endpoint with a key."""
    status, body, error = request(url + "/v1/models", timeout=timeout)
    problems = [refusal_problem("/v1/models", 401 if has_key else 200, status, error, body)]
    for route in GUARDED_ROUTES if has_key and api_guard else ():
        status, body, error = request(url + route, data="{}", headers={"Content-Type": "application/json"},
                                      timeout=timeout)
        problems.append(refusal_problem("POST " + route, 401, status, error, body))
    return [p for p in problems if p]


def check_models(url, model, headers, timeout):
    """The problem with /v1/models asked with the key (None when it answers 200 listing ``model``)."""
    status, body, error = request(url + "/v1/models", headers=headers, timeout=timeout)
    if status != 200:
        return "with its key /v1/models %s, expected 200" % answered(status, error, body)
    try:
        data = json.loads(body).get("data")
        listed = [str(item.get("id")) for item in data]
    except (AttributeError, TypeError, ValueError):
        return "with its key /v1/models answered 200 without a model list, body: %s" % excerpt(body, 120)
    if model not in listed:
        return "/v1/models does not list %s (it lists: %s)" % (model, ", ".join(listed) or "nothing")
    return None


def the_timed_completion(url, model, api_key, prompt, max_tokens, timeout):
    """(summary of one greedy completion as vllm_answer.summarise gives it, without its json; the problem or None)."""
    summary, body, error = timed_completion(url + "/v1/completions", model, prompt, max_tokens, api_key, timeout)
    summary.pop("json", None)
    status = summary["status"]
    if status != 200:
        return summary, "the timed completion (model %s) %s" % (model, answered(status, error, body))
    if summary["completion_tokens"] <= 0:
        return summary, "the timed completion (model %s) answered 200 without completion tokens (max_tokens=%d)" % (
            model, max_tokens)
    return summary, None


def read_metrics(url, timeout):
    """(figures of /metrics as module_utils.vllm_metrics reads them, the problem or None)."""
    status, body, error = request(url + "/metrics", timeout=timeout)
    if status != 200:
        return {}, "/metrics %s, expected 200" % answered(status, error, body)
    try:
        return figures(body), None
    except ValueError as exc:
        return {}, "/metrics: %s" % exc


def blank_entry(endpoint):
    """The result entry of an endpoint before any check."""
    return {"name": endpoint["name"], "url": endpoint["url"], "port": port_of(endpoint["url"]), "ok": False,
            "problems": [], "text": "", "completion_tokens": 0, "elapsed": 0.0, "tokens_per_second": 0.0,
            "correctness": {}, "metrics": {}}


def generate(entry, url, model, key, correctness_check, settings):
    """The timed completion, then the correctness gate, of one endpoint, into ``entry``: the problem or None."""
    timeout = settings["timeout"]
    summary, problem = the_timed_completion(url, model, key, settings["prompt"], settings["max_tokens"], timeout)
    entry.update((name, summary[name]) for name in ("text", "completion_tokens", "elapsed", "tokens_per_second"))
    if problem is None:
        known = settings["known_answers"] if correctness_check else []
        entry["correctness"], failure = gate(asker(url + "/v1/completions", model, key, timeout), known,
                                             settings["min_correct"], settings["known_answers_max_tokens"],
                                             settings["determinism_prompt"], settings["determinism_max_tokens"])
        problem = "model %s %s" % (model, failure) if failure else None
    return problem


def verify_one(endpoint, settings, generating):
    """The result entry of one endpoint (see RETURN); ``settings`` are the module's other options, ``generating`` the
    lock held while a model of the host generates (one endpoint's tokens per second measured alone)."""
    url, model, key = endpoint["url"].rstrip("/"), endpoint["model"], endpoint["api_key"]
    keyed = bool(key) if endpoint.get("keyed") is None else endpoint["keyed"]
    quick = min(QUICK_TIMEOUT, settings["timeout"])
    entry = blank_entry(endpoint)
    entry["problems"] = check_refusals(url, keyed, settings["api_guard"], quick)
    if keyed and not key:
        problem = "it has a key file without a key (an endpoint with a key must be given it; it would serve anyone)"
    else:
        problem = check_models(url, model, key_headers(key), quick)
    if problem is None:
        with generating:
            problem = generate(entry, url, model, key, endpoint["correctness_check"], settings)
    if problem is None:
        entry["metrics"], problem = read_metrics(url, quick)
    if problem:
        entry["problems"].append(problem)
    entry["ok"] = not entry["problems"]
    return entry


def verify_all(endpoints, settings):
    """The result entries of every endpoint, in order; the endpoints are verified at the same time, but the models
    generate one at a time."""
    generating = threading.Lock()
    return at_once(endpoints, lambda endpoint: verify_one(endpoint, settings, generating),
                   lambda endpoint, error: dict(blank_entry(endpoint), problems=[error]), "vllm_verify")


def failure_message(results):
    """The failure naming every endpoint that failed (name:port) and what failed, or '' when all passed."""
    failed = [r for r in results if not r["ok"]]
    if not failed:
        return ""
    return "%d of %d vLLM endpoint(s) failed verify:\n%s" % (len(failed), len(results), "\n".join(
        "- %s:%s: %s" % (r["name"], r["port"], "; ".join(r["problems"])) for r in failed))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoints=endpoints_option(keyed=dict(type="bool"), correctness_check=dict(type="bool", default=True)),
            api_guard=dict(type="bool", default=True),
            prompt=dict(type="str", required=True),
            max_tokens=dict(type="int", default=16, no_log=False),
            timeout=dict(type="int", default=600),
            known_answers_max_tokens=dict(type="int", default=16, no_log=False),
            **gate_options()
        ),
        supports_check_mode=False,
    )
    p = module.params
    wrong = below_one(p, "timeout", "max_tokens", "known_answers_max_tokens", "determinism_max_tokens")
    if wrong:
        module.fail_json(msg=wrong)
    wrong = check_inputs(p["known_answers"], p["min_correct"])
    if wrong:
        module.fail_json(msg="%s (rule book known_answers)" % wrong)
    results = verify_all(p["endpoints"], dict((k, v) for k, v in p.items() if k != "endpoints"))
    failure = failure_message(results)
    if failure:
        module.fail_json(msg=failure, endpoints=results, changed=False)
    module.exit_json(endpoints=results, changed=False)


if __name__ == "__main__":
    main()
