# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The request to vLLM's OpenAI-compatible ``/v1/completions`` and the reading of its answer.

Shared by the modules that ask an endpoint for a completion: ``vllm_completion`` (one timed completion, the
tokens/s of the fleet table), ``vllm_ready`` (the readiness gate of ``vllm_service``), ``vllm_correctness`` and
``vllm_verify`` (the endpoint gate of ``fleet_verify``); :func:`request` is the one HTTP request of those that
ask from threads (``open_url``, no module object). An answer is ready when it came with 200, has at least one
choice and ``usage.completion_tokens`` above 0: a wedged engine still answers ``/health``, and a 200 without
tokens is no completion.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from ansible.module_utils.six.moves.http_client import HTTPException
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

# How much of an answer's body a failure shows.
BODY_EXCERPT = 300


def request(url, data=None, headers=None, timeout=10):
    """(status, body text, error text) of one request, POST when ``data`` is given; status -1 when no answer came."""
    try:
        response = open_url(url, data=data, headers=headers, method="POST" if data is not None else "GET",
                            timeout=timeout)
        return response.getcode(), response.read().decode("utf-8", "replace"), ""
    except HTTPError as exc:
        try:
            body = exc.read().decode("utf-8", "replace")
        except (AttributeError, OSError, HTTPException):
            body = ""
        return exc.code, body, str(exc.reason)
    except URLError as exc:
        return -1, "", str(exc.reason)
    except (OSError, HTTPException, ValueError) as exc:
        return -1, "", "%s: %s" % (type(exc).__name__, exc)


def at_once(endpoints, check, broken, name):
    """``[check(endpoint) for endpoint in endpoints]``, each endpoint in its own thread (named ``name-<index>``), in
    order; an exception of ``check`` gives ``broken(endpoint, "<type>: <message>")`` in its place."""
    results = [None] * len(endpoints)

    def run(index, endpoint):
        try:
            results[index] = check(endpoint)
        except Exception as exc:  # pylint: disable=broad-except
            # a bug here must name its endpoint, not leave a hole in the results
            results[index] = broken(endpoint, "%s: %s" % (type(exc).__name__, exc))

    threads = [threading.Thread(target=run, args=(i, e), name="%s-%d" % (name, i)) for i, e in enumerate(endpoints)]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join()
    return results


def excerpt(text, limit=BODY_EXCERPT):
    """One line of at most ``limit`` characters of ``text``."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "..."


def endpoint_options():
    """The argument spec of the options that name one endpoint to ask: its URL, the served model and its key (never
    logged). The options of sparkfleet.gb10.vllm_completion and vllm_correctness (documented once: the doc fragment
    sparkfleet.gb10.vllm_endpoint), and the suboptions of an entry of :func:`endpoints_option`."""
    return dict(
        url=dict(type="str", required=True),
        model=dict(type="str", required=True),
        api_key=dict(type="str", default="", no_log=True),
    )


def endpoints_option(**more):
    """The argument spec of the option ``endpoints`` of the modules that check every endpoint of a host at once
    (vllm_ready, vllm_verify): each entry its name, base URL, served model and key, and the suboptions ``more``."""
    options = dict(name=dict(type="str", required=True), **endpoint_options())
    options.update(more)
    return dict(type="list", elements="dict", required=True, options=options)


def below_one(params, *names):
    """What is wrong with the first of the integer parameters ``names`` that is below 1 (None when none is); the
    module refuses it."""
    for name in names:
        if params[name] < 1:
            return "%s must be at least 1, not %d" % (name, params[name])
    return None


def key_headers(api_key=""):
    """The headers that carry the endpoint's key (``Authorization: Bearer``); none without one."""
    return {"Authorization": "Bearer " + api_key} if api_key else {}


def completion_request(model, prompt, max_tokens, api_key=""):
    """(headers, JSON body) of one greedy request to vLLM's /v1/completions (temperature 0), with the endpoint's
    bearer key when there is one: the one shape the readiness gate, the timed completion and the correctness
    asks send."""
    headers = {"Content-Type": "application/json"}
    headers.update(key_headers(api_key))
    return headers, json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})


def timed_completion(url, model, prompt, max_tokens, api_key="", timeout=600, clock=time.monotonic):
    """One greedy completion asked of ``url`` (an endpoint's /v1/completions), timed from sending the request to
    having read the answer: (summary as summarise() gives it, the answer's body, error text). The one timed ask of
    the readiness gate, the timed completion and the endpoint gate."""
    headers, payload = completion_request(model, prompt, max_tokens, api_key)
    began = clock()
    status, body, error = request(url, data=payload, headers=headers, timeout=timeout)
    return summarise(status, clock() - began, body), body, error


def tokens_per_second(completion_tokens, elapsed):
    """Completion tokens over the measured seconds, rounded to 0.1; 0.0 without either."""
    try:
        tokens, seconds = int(completion_tokens or 0), float(elapsed or 0)
    except (TypeError, ValueError):
        return 0.0
    if tokens <= 0 or seconds <= 0:
        return 0.0
    return round(tokens / seconds, 1)


def summarise(status, elapsed, body):
    """The result for an answer (status, seconds, raw body): status, elapsed, completion_tokens,
    tokens_per_second, text of the first choice, and json (the answer) when it was a JSON object."""
    result = {"status": status, "elapsed": round(elapsed, 3), "completion_tokens": 0, "tokens_per_second": 0.0,
              "text": ""}
    try:
        answer = json.loads(body) if body else None
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        result["json"] = answer
        try:
            result["completion_tokens"] = int((answer.get("usage") or {}).get("completion_tokens") or 0)
        except (AttributeError, TypeError, ValueError):
            result["completion_tokens"] = 0
        choices = answer.get("choices") or [{}]
        first = choices[0] if isinstance(choices, list) and isinstance(choices[0], dict) else {}
        result["text"] = str(first.get("text") or "")
    result["tokens_per_second"] = tokens_per_second(result["completion_tokens"], elapsed)
    return result


def choices_of(summary):
    """How many choices the answer summarised by summarise() has (0 when it had none or was no JSON object)."""
    choices = (summary.get("json") or {}).get("choices")
    return len(choices) if isinstance(choices, list) else 0


def is_ready(summary):
    """True for an answer that is a real completion: 200, a choice, and completion tokens."""
    return summary["status"] == 200 and choices_of(summary) > 0 and summary["completion_tokens"] > 0
