#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Wait on the host, in one call, until every vLLM endpoint of a list answers /health and a real completion."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_ready
short_description: Wait until vLLM endpoints answer /health and a real completion, all at once, in one call
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
description:
  - For every endpoint at the same time (one thread each), on the host, polls C(GET <url>/health) every
    O(interval) seconds until it answers 200 or O(timeout) seconds have passed; then asks
    C(POST <url>/v1/completions) (O(endpoints[].model), O(prompt), O(max_tokens), temperature 0, the endpoint's
    key as a bearer token) up to O(tries) times, O(retry_delay) seconds apart, until the answer is 200
    with at least one choice and C(usage.completion_tokens) above 0. A wedged engine still answers C(/health).
  - One module call per host however many endpoints it serves, where a looped M(ansible.builtin.uri) with
    C(until) costs one round trip per poll and waits for the endpoints one after another; the total is about
    the slowest endpoint, not the sum.
  - Fails naming each endpoint that is not ready and why (no 200 from C(/health) in time, with the last
    status or error; or the last completion's status and the start of its body). The keys are never
    returned.
  - Read-only on the host, but it makes the models generate; like M(ansible.builtin.uri) it is skipped in
    check mode.
options:
  endpoints:
    description: The endpoints to wait for.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: What the result and the failure call the endpoint, for example its systemd unit.
        type: str
        required: true
      url:
        description: The endpoint's base URL, for example C(http://127.0.0.1:8000) (no trailing path).
        type: str
        required: true
      model:
        description: The served model name the completion asks for.
        type: str
        required: true
      api_key:
        description: "The endpoint's API key, sent as C(Authorization: Bearer); empty sends none."
        type: str
        default: ""
  timeout:
    description: Seconds each endpoint may take to answer C(/health) with 200, counted from the start of the call.
    type: int
    required: true
  interval:
    description: Seconds between two C(/health) polls of one endpoint.
    type: float
    default: 2
  prompt:
    description: The prompt of the completion.
    type: str
    required: true
  max_tokens:
    description: max_tokens of the completion (reasoning models need enough to get past their thinking).
    type: int
    default: 16
  request_timeout:
    description: Seconds to wait for the answer to one completion request.
    type: int
    default: 300
  tries:
    description: Completion requests per endpoint, at most, until one is a real completion.
    type: int
    default: 6
  retry_delay:
    description: Seconds between two completion requests of one endpoint.
    type: float
    default: 10
seealso:
  - module: sparkfleet.gb10.vllm_completion
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Wait until every API this host serves answers /health and a real completion
  sparkfleet.gb10.vllm_ready:
    endpoints:
      - name: sparkfleet-vllm-tiny
        url: http://127.0.0.1:8000
        model: tiny-tp
        api_key: "{{ vllm_service_api_key }}"
      - name: sparkfleet-vllm-coder
        url: http://127.0.0.1:8001
        model: coder
    timeout: 1800
    prompt: Say hello.
    max_tokens: 16
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
      sample: sparkfleet-vllm-tiny
    url:
      description: The endpoint's O(endpoints[].url).
      type: str
      sample: http://127.0.0.1:8000
    ok:
      description: Whether it answered /health with 200 and then a real completion.
      type: bool
      sample: true
    healthy_after:
      description: Seconds from the start of the call to its first 200 from /health (null when none came).
      type: float
      sample: 41.2
    tries:
      description: Completion requests made.
      type: int
      sample: 1
    status:
      description: >-
        HTTP status of the last completion answer, or of the last /health answer when it never became healthy
        (-1 when the request failed before an answer came).
      type: int
      sample: 200
    completion_tokens:
      description: usage.completion_tokens of the last completion answer (0 when it had none).
      type: int
      sample: 16
    tokens_per_second:
      description: completion_tokens over the seconds of the last completion request, rounded to 0.1.
      type: float
      sample: 38.8
    error:
      description: Why it is not ready (empty when it is).
      type: str
      sample: ""
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import (
    at_once, choices_of, below_one, endpoints_option, excerpt, is_ready, request, timed_completion)

# Longest one /health poll may wait for its answer: a healthy server answers at once, a starting one may not
# listen yet (refused at once) or hang while it loads; the deadline still cuts it short.
HEALTH_REQUEST_TIMEOUT = 10


def wait_for_health(url, start, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """(seconds from ``start`` to the first 200 of ``url``/health or None, last status, last error)."""
    deadline = start + timeout
    while True:
        remaining = deadline - clock()
        status, _body, error = request(url + "/health", timeout=max(1, min(HEALTH_REQUEST_TIMEOUT, remaining)))
        if status == 200:
            return round(clock() - start, 1), status, ""
        if clock() >= deadline:
            return None, status, error
        sleep(max(0, min(interval, deadline - clock())))


def ask_completion(endpoint, prompt, max_tokens, request_timeout, tries, retry_delay, clock=time.monotonic,
                   sleep=time.sleep):
    """(summary of the last answer as module_utils.vllm_answer.summarise gives it, error text, tries made)."""
    summary, error = None, ""
    for n in range(1, max(1, tries) + 1):
        summary, body, error = timed_completion(endpoint["url"] + "/v1/completions", endpoint["model"], prompt,
                                                max_tokens, endpoint["api_key"], request_timeout, clock)
        summary["body"] = body
        if is_ready(summary):
            return summary, "", n
        if n < tries:
            sleep(retry_delay)
    return summary, error, max(1, tries)


def wait_one(endpoint, start, timeout, interval, prompt, max_tokens, request_timeout, tries, retry_delay):
    """The result entry of one endpoint (see RETURN)."""
    url = endpoint["url"].rstrip("/")
    entry = {"name": endpoint["name"], "url": endpoint["url"], "ok": False, "healthy_after": None, "tries": 0,
             "status": -1, "completion_tokens": 0, "tokens_per_second": 0.0, "error": ""}
    healthy_after, status, error = wait_for_health(url, start, timeout, interval)
    entry["status"] = status
    if healthy_after is None:
        entry["error"] = "no 200 from %s/health within %d s (last: %s)" % (
            url, timeout, "status %d, %s" % (status, error) if status != -1 else error or "no answer")
        return entry
    entry["healthy_after"] = healthy_after
    summary, error, entry["tries"] = ask_completion(dict(endpoint, url=url), prompt, max_tokens, request_timeout,
                                                    tries, retry_delay)
    entry.update(status=summary["status"], completion_tokens=summary["completion_tokens"],
                 tokens_per_second=summary["tokens_per_second"])
    if is_ready(summary):
        entry["ok"] = True
        return entry
    if summary["status"] == -1:
        why = "no answer (%s)" % error
    else:
        why = "status %d, %d choice(s), %d completion token(s) (max_tokens=%d)%s, body: %s" % (
            summary["status"], choices_of(summary), summary["completion_tokens"], max_tokens,
            ", " + error if error else "", excerpt(summary["body"]) or "(empty)")
    entry["error"] = "healthy after %s s, but %s/v1/completions (model %s) gave no completion in %d tries: %s" % (
        healthy_after, url, endpoint["model"], entry["tries"], why)
    return entry


def wait_all(endpoints, timeout, interval=2, prompt="Say hello.", max_tokens=16, request_timeout=300, tries=6,
             retry_delay=10, start=None):
    """The result entries of every endpoint, in order; the endpoints are waited for at the same time."""
    start = time.monotonic() if start is None else start

    def check(endpoint):
        return wait_one(endpoint, start, timeout, interval, prompt, max_tokens, request_timeout, tries, retry_delay)

    def broken(endpoint, error):
        return {"name": endpoint["name"], "url": endpoint["url"], "ok": False, "healthy_after": None, "tries": 0,
                "status": -1, "completion_tokens": 0, "tokens_per_second": 0.0, "error": error}

    return at_once(endpoints, check, broken, "vllm_ready")


def failure_message(results):
    """The failure naming every endpoint that is not ready, or '' when all are."""
    failed = [r for r in results if not r["ok"]]
    if not failed:
        return ""
    return "%d of %d vLLM endpoint(s) not ready: %s" % (
        len(failed), len(results), "; ".join("%s: %s" % (r["name"], r["error"]) for r in failed))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoints=endpoints_option(),
            timeout=dict(type="int", required=True),
            interval=dict(type="float", default=2),
            prompt=dict(type="str", required=True),
            max_tokens=dict(type="int", default=16, no_log=False),
            request_timeout=dict(type="int", default=300),
            tries=dict(type="int", default=6),
            retry_delay=dict(type="float", default=10),
        ),
        supports_check_mode=False,
    )
    p = module.params
    wrong = below_one(p, "timeout", "tries", "request_timeout", "max_tokens")
    if wrong:
        module.fail_json(msg=wrong)
    if p["interval"] < 0 or p["retry_delay"] < 0:
        module.fail_json(msg="interval and retry_delay must not be negative")
    results = wait_all(p["endpoints"], p["timeout"], p["interval"], p["prompt"], p["max_tokens"],
                       p["request_timeout"], p["tries"], p["retry_delay"])
    failure = failure_message(results)
    if failure:
        module.fail_json(msg=failure, endpoints=results, changed=False)
    module.exit_json(endpoints=results, changed=False)


if __name__ == "__main__":
    main()
