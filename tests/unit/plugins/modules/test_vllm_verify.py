# -*- coding: utf-8 -*-
"""vllm_verify: the endpoint gate of fleet_verify against real HTTP servers on 127.0.0.1 (tests/unit/fake_vllm.py)
that refuse or serve without a key, list another model, answer fluent garbage or answer slowly; the endpoints are
verified at the same time, and neither the result nor the module run by ansible-playbook ever shows a key."""

import json
import threading

import pytest

from ansible_local import kept_result  # tests/unit/ansible_local.py
from fake_vllm import closed_url  # tests/unit/fake_vllm.py (fixture serve_vllm: conftest.py)
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.modules import vllm_verify as m

KEY = "sk-verify-all-not-for-printing"
KNOWN = rulebook.setting("known_answers")
PROMPT = rulebook.setting("determinism_prompt")
GARBAGE = " the harbour lights were dim and the ferry left late that evening"
SETTINGS = {"api_guard": True, "prompt": "The capital of France is", "max_tokens": 16, "timeout": 10,
            "known_answers": KNOWN, "min_correct": rulebook.setting("known_answers_min_correct"),
            "known_answers_max_tokens": 16, "determinism_prompt": PROMPT, "determinism_max_tokens": 8}


def right(body, _nth):
    """The answer of a model that knows: the first accepted word of a known prompt, the same text otherwise."""
    for item in KNOWN:
        if item["prompt"] == body["prompt"]:
            return " %s." % item["expect"][0]
    return " four five six"


def endpoint(name, url, key="", model="tiny-tp", check=True):
    return {"name": name, "url": url, "model": model, "api_key": key, "correctness_check": check}


def verify(*endpoints, **settings):
    return m.verify_all(list(endpoints), dict(SETTINGS, **settings))


# ------------------------------------------------------------------ pieces
@pytest.mark.parametrize("url, port", [("http://127.0.0.1:8000", 8000), ("http://10.0.0.2:8001/", 8001),
                                       ("http://spark-1", 80), ("https://spark-1", 443), ("not a url", None)])
def test_the_port_is_read_from_the_url(url, port):
    assert m.port_of(url) == port


@pytest.mark.parametrize("route, expected, status, error, body, problem", [
    ("/v1/models", 401, 401, "Unauthorized", "", None),
    ("/v1/models", 200, 200, "", "{}", None),
    ("/v1/models", 401, 200, "", "{}", "served without its key: /v1/models answered 200, expected 401"),
    ("POST /tokenize", 401, 404, "Not Found", '{"error": "Not Found"}',
     'without its key POST /tokenize answered 404, body: {"error": "Not Found"}, expected 401'),
    ("/v1/models", 401, -1, "Connection refused", "", "without its key /v1/models no answer (Connection refused), "
                                                      "expected 401"),
    ("/v1/models", 200, 401, "Unauthorized", "", "without a key (the entry opted out of one) /v1/models answered "
                                                 "401, expected 200"),
])
def test_a_route_asked_without_a_key_must_answer_what_the_entry_says(route, expected, status, error, body, problem):
    assert m.refusal_problem(route, expected, status, error, body) == problem


def test_the_failure_names_each_failed_endpoint_with_its_port_and_what_failed():
    results = [{"name": "a", "port": 8000, "ok": True, "problems": []},
               {"name": "b", "port": 8001, "ok": False, "problems": ["why b", "and why"]},
               {"name": "c", "port": 8002, "ok": False, "problems": ["why c"]}]
    assert m.failure_message(results) == ("2 of 3 vLLM endpoint(s) failed verify:\n"
                                          "- b:8001: why b; and why\n- c:8002: why c")
    assert m.failure_message(results[:1]) == ""


# ------------------------------------------------------------------ against real servers
def test_all_good_every_check_of_every_endpoint(serve_vllm):
    keyed, keyed_url = serve_vllm("keyed", key=KEY, guard=True, complete=right)
    open_, open_url = serve_vllm("open", served="coder", complete=right)
    results = verify(endpoint("tiny", keyed_url, key=KEY), endpoint("coder", open_url + "/", model="coder"))
    assert [(r["name"], r["ok"], r["problems"]) for r in results] == [("tiny", True, []), ("coder", True, [])]
    assert m.failure_message(results) == ""
    tiny = results[0]
    assert tiny["port"] == keyed.port and tiny["url"] == keyed_url
    assert tiny["text"] == " Paris." and tiny["completion_tokens"] == 1 and tiny["elapsed"] > 0
    assert tiny["tokens_per_second"] > 0
    assert tiny["correctness"]["summary"] == "answers %d/%d" % (len(KNOWN), len(KNOWN))
    assert tiny["correctness"]["form"] == "known-answers" and tiny["correctness"]["deterministic"] is True
    # the recording of tests/fixtures/vllm, read as the filter vllm_metrics reads it
    assert tiny["metrics"]["prefix_cache_queries"] == 427.0 and tiny["metrics"]["prefix_cache_hits"] == 128.0
    assert tiny["metrics"]["prefix_cache_hit_rate"] == round(128.0 / 427.0, 3) and tiny["metrics"]["kv_cache_usage"] == 0.0
    # without the key: /v1/models, POST /invocations and /tokenize refused; then the timed completion, the known
    # answers and the determinism prompt twice, greedy, with the key
    assert keyed.log.count(("keyed", "refused")) == 3 and ("open", "refused") not in open_.log
    assert [(r["prompt"], r["max_tokens"], r["temperature"]) for r in keyed.requests] == \
        [("The capital of France is", 16, 0)] + [(item["prompt"], 16, 0) for item in KNOWN] + [(PROMPT, 8, 0)] * 2
    assert [r["model"] for r in open_.requests] == ["coder"] * (len(KNOWN) + 3)


def test_a_key_protected_endpoint_that_answers_200_without_its_key_fails(serve_vllm):
    _vllm, url = serve_vllm("unguarded", complete=right)  # no key: it serves anyone
    [result] = verify(endpoint("tiny", url, key=KEY))
    port = m.port_of(url)
    assert result["ok"] is False
    assert result["problems"][0] == "served without its key: /v1/models answered 200, expected 401"
    assert result["problems"][1].startswith("without its key POST /invocations answered 404")
    assert "- tiny:%d: served without its key: /v1/models answered 200, expected 401; " % port in \
        m.failure_message([result])
    # the other checks still ran: it serves, but to anyone
    assert result["correctness"]["summary"] == "answers %d/%d" % (len(KNOWN), len(KNOWN)) and result["metrics"]


def test_the_guarded_routes_are_asked_only_with_api_guard(serve_vllm):
    _vllm, url = serve_vllm("v1-only", key=KEY, complete=right)  # vLLM's own check: /v1 only
    [guarded] = verify(endpoint("tiny", url, key=KEY))
    assert [p.split(" answered")[0] for p in guarded["problems"]] == [
        "without its key POST /invocations", "without its key POST /tokenize"]
    [unguarded] = verify(endpoint("tiny", url, key=KEY), api_guard=False)
    assert unguarded["ok"] is True, unguarded["problems"]


def test_an_entry_that_opted_out_of_a_key_must_answer_without_one(serve_vllm):
    _vllm, url = serve_vllm("keyed", key=KEY, guard=True, complete=right)
    [result] = verify(endpoint("tiny", url))
    assert result["problems"][0] == ("without a key (the entry opted out of one) /v1/models answered 401, body: "
                                     '{"error": "Unauthorized"}, expected 200')
    assert result["problems"][1].startswith("with its key /v1/models answered 401")


def test_models_not_listing_the_served_name_fails_before_any_completion(serve_vllm):
    vllm, url = serve_vllm("other", served="other-model", complete=right)
    [result] = verify(endpoint("tiny", url))
    assert result["ok"] is False and result["problems"] == ["/v1/models does not list tiny-tp (it lists: other-model)"]
    assert vllm.requests == [] and result["correctness"] == {} and result["metrics"] == {}


def test_fluent_garbage_fails_the_correctness_gate_naming_the_endpoint(serve_vllm):
    _vllm, url = serve_vllm("garbage", complete=lambda body, nth: GARBAGE)
    good, good_url = serve_vllm("good", served="coder", complete=right)
    results = verify(endpoint("tiny", url), endpoint("coder", good_url, model="coder"))
    bad = results[0]
    assert [r["ok"] for r in results] == [False, True]
    assert bad["text"] == GARBAGE and bad["correctness"]["correct"] == 0 and bad["metrics"] == {}
    [problem] = bad["problems"]
    assert problem.startswith("model tiny-tp answered 0 of %d known-answer prompts right" % len(KNOWN))
    assert "rule moe_backend" in problem
    message = m.failure_message(results)
    assert message.startswith("1 of 2 vLLM endpoint(s) failed verify:\n- tiny:%d: model tiny-tp answered 0 of " % (
        m.port_of(url))) and "coder:%d" % good.port not in message


def test_an_entry_with_the_check_off_gets_only_the_determinism_ask(serve_vllm):
    vllm, url = serve_vllm("random", complete=lambda body, nth: GARBAGE)
    [result] = verify(endpoint("tiny", url, check=False))
    assert result["ok"] is True and result["correctness"]["summary"] == "same twice"
    assert [r["prompt"] for r in vllm.requests] == ["The capital of France is", PROMPT, PROMPT]


def test_an_endpoint_nobody_listens_on_is_named_with_the_reason():
    [result] = verify(endpoint("gone", closed_url()), timeout=2)
    assert result["ok"] is False and result["problems"][0].startswith("without a key (the entry opted out of one) "
                                                                      "/v1/models no answer (")
    assert result["problems"][1].startswith("with its key /v1/models no answer (")


def test_a_bug_in_one_endpoints_checks_names_it_and_leaves_no_hole(serve_vllm):
    _vllm, url = serve_vllm("good", complete=right)
    broken = {"name": "broken", "url": "http://127.0.0.1:1", "api_key": "", "correctness_check": True}  # no model
    good, bad = verify(endpoint("tiny", url), broken)
    assert good["ok"] is True and bad["ok"] is False and bad["problems"] == ["KeyError: 'model'"]
    assert bad["name"] == "broken" and bad["port"] == 1


def test_endpoints_are_verified_at_the_same_time_but_generate_one_at_a_time(serve_vllm):
    """The two servers' first requests meet at a barrier: each waits there until the other server has been asked
    too, so one endpoint verified after the other fails (its first answer is a 500), whatever the speed of the
    machine. The generating asks do not overlap: each model's three completions come together in the shared log
    (the tokens per second of one model are measured while the other is idle)."""
    meet = threading.Barrier(2)
    one, one_url = serve_vllm("one", meet=meet)
    _two, two_url = serve_vllm("two", meet=meet)
    results = verify(endpoint("one", one_url, check=False), endpoint("two", two_url, check=False))
    assert [r["ok"] for r in results] == [True, True], [r["problems"] for r in results]
    # shared by both servers: each one's three completions come together, never between the other's
    generated = [name for name, what in one.log if what == "completion"]
    assert sorted(generated) == ["one"] * 3 + ["two"] * 3
    assert generated in (["one"] * 3 + ["two"] * 3, ["two"] * 3 + ["one"] * 3), generated


def test_the_key_is_never_in_the_result(serve_vllm):
    _keyed, keyed_url = serve_vllm("keyed", key=KEY, guard=True, complete=right)
    _unguarded, unguarded_url = serve_vllm("unguarded", complete=lambda body, nth: GARBAGE)
    results = verify(endpoint("tiny", keyed_url, key=KEY), endpoint("open", unguarded_url, key=KEY))
    assert [r["ok"] for r in results] == [True, False]
    assert KEY not in json.dumps(results) and KEY not in m.failure_message(results)


# ------------------------------------------------------------------ the module, run by ansible-playbook
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Verify every endpoint in one call, with the rule book's prompts
      sparkfleet.gb10.vllm_verify:
        endpoints:
          - {name: tiny, url: "{{ good }}", model: tiny-tp, api_key: "{{ key }}"}
          - {name: open, url: "{{ open }}", model: tiny-tp, api_key: "{{ key }}"}
          - {name: random, url: "{{ random }}", model: tiny-tp, correctness_check: false}
        prompt: The capital of France is
        max_tokens: 16
        timeout: 10
        known_answers: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers') }}"
        min_correct: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_min_correct') }}"
        known_answers_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_max_tokens') }}"
        determinism_prompt: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_prompt') }}"
        determinism_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_max_tokens') }}"
      register: __verify
      ignore_errors: true

    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ __verify | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def test_the_module_names_each_failed_endpoint_and_never_the_key(tmp_path, serve_vllm):
    good, good_url = serve_vllm("good", key=KEY, guard=True, complete=right)
    _open, open_url = serve_vllm("open", complete=right)
    _random, random_url = serve_vllm("random", complete=lambda body, nth: GARBAGE)
    proc, result = kept_result(tmp_path, PLAY, {"good": good_url, "open": open_url, "random": random_url, "key": KEY},
                               KEY, env={"ANSIBLE_VERBOSITY": "3"})
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("1 of 3 vLLM endpoint(s) failed verify:\n- open:%d: served without its key: "
                                    "/v1/models answered 200, expected 401; " % m.port_of(open_url))
    assert [(e["name"], e["ok"]) for e in result["endpoints"]] == [("tiny", True), ("open", False), ("random", True)]
    assert [e["correctness"]["summary"] for e in result["endpoints"]] == [
        "answers %d/%d" % (len(KNOWN), len(KNOWN))] * 2 + ["same twice"]
    assert good.requests[0]["prompt"] == "The capital of France is" and len(good.requests) == len(KNOWN) + 3
    # -vvv shows the module's arguments: the two keys masked
    assert proc.stdout.count("api_key: VALUE_SPECIFIED_IN_NO_LOG_PARAMETER") == 2


def test_a_keyed_endpoint_with_an_empty_key_fails_even_when_it_serves(serve_vllm):
    """A key file without a key: vLLM and the guard then run without one and serve anyone. The entry still has a key
    (keyed), so the endpoint must refuse without it; an empty key never makes it an opted-out endpoint."""
    vllm, url = serve_vllm("empty", complete=right)
    [result] = verify(dict(endpoint("tiny", url), keyed=True))
    assert result["ok"] is False
    assert result["problems"][0] == "served without its key: /v1/models answered 200, expected 401"
    assert result["problems"][-1].startswith("it has a key file without a key")
    assert vllm.requests == []
    # the same server, for an entry that opted out (keyed false), passes
    [opted_out] = verify(dict(endpoint("tiny", url), keyed=False))
    assert opted_out["ok"] is True, opted_out["problems"]


def test_asks_that_make_no_model_generate_wait_30_s_at_most(serve_vllm, monkeypatch):
    seen = []
    real = m.request

    def spy(url, data=None, headers=None, timeout=10):
        seen.append((url.rsplit("/", 1)[-1], timeout))
        return real(url, data=data, headers=headers, timeout=timeout)
    monkeypatch.setattr(m, "request", spy)
    _vllm, url = serve_vllm("quick", key=KEY, guard=True, complete=right)
    [result] = verify(endpoint("tiny", url, key=KEY), timeout=600)
    assert result["ok"] is True, result["problems"]
    assert sorted(set(seen)) == [("invocations", 30), ("metrics", 30), ("models", 30), ("tokenize", 30)]
