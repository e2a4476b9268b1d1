# -*- coding: utf-8 -*-
"""vllm_ready: real HTTP servers on 127.0.0.1 that turn healthy late, never, answer 200 without a completion or
want a key; the endpoints are waited for at the same time, and the module run by ansible-playbook never shows
a key."""

import json

import pytest

from ansible_local import REPO, kept_result, local_playbook  # tests/unit/ansible_local.py
from fake_vllm import closed_port, closed_url, completion  # tests/unit/fake_vllm.py (fixture serve_vllm: conftest.py)
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_answer
from ansible_collections.sparkfleet.gb10.plugins.modules import vllm_ready as m

KEY = "sk-ready-not-for-printing"


def no_choices(body, _nth):
    """A 200 without a completion (a wedged engine)."""
    return 200, dict(completion(body["model"]), choices=[])


def endpoint(name, url, key="", model="tiny-tp"):
    return {"name": name, "url": url, "model": model, "api_key": key}


ASK = dict(prompt="Say hello.", max_tokens=16, request_timeout=10, tries=2, retry_delay=0.05)
FAST = dict(ASK, interval=0.05)


# ------------------------------------------------------------------ reading an answer
@pytest.mark.parametrize("status, body, ready", [
    (200, completion("tiny-tp"), True),
    (200, dict(completion("tiny-tp"), choices=[]), False),
    (200, completion("tiny-tp", tokens=0), False),
    (200, {"choices": [{"text": "x"}]}, False),
    (500, completion("tiny-tp"), False),
    (200, "not json", False),
])
def test_a_real_completion_is_200_with_a_choice_and_tokens(status, body, ready):
    summary = vllm_answer.summarise(status, 0.1, body if isinstance(body, str) else json.dumps(body))
    assert vllm_answer.is_ready(summary) is ready


def test_excerpt_keeps_one_short_line():
    assert vllm_answer.excerpt('{"a":\n  1}') == '{"a": 1}'
    assert vllm_answer.excerpt("x" * 400, 10) == "xxxxxxxxxx..."
    assert vllm_answer.excerpt(None) == ""


def test_the_failure_names_only_the_endpoints_that_are_not_ready():
    results = [{"name": "a", "ok": True, "error": ""}, {"name": "b", "ok": False, "error": "why b"},
               {"name": "c", "ok": False, "error": "why c"}]
    assert m.failure_message(results) == "2 of 3 vLLM endpoint(s) not ready: b: why b; c: why c"
    assert m.failure_message(results[:1]) == ""


# ------------------------------------------------------------------ against real servers
def test_an_endpoint_healthy_after_some_503s_is_asked_a_greedy_completion(serve_vllm):
    handler, url = serve_vllm("late", ready=lambda server: server.polls >= 3)
    [result] = m.wait_all([endpoint("sparkfleet-vllm-late", url)], timeout=10, **FAST)
    assert result["ok"] is True, result["error"]
    assert result["error"] == "" and result["status"] == 200 and result["completion_tokens"] == 3
    assert result["healthy_after"] is not None and result["tries"] == 1
    assert result["name"] == "sparkfleet-vllm-late" and result["url"] == url
    assert handler.polls == 3 and handler.log == [("late", "poll")] * 3 + [("late", "healthy"), ("late", "completion")]
    assert handler.requests == [{"model": "tiny-tp", "prompt": "Say hello.", "max_tokens": 16, "temperature": 0}]


def test_an_endpoint_never_healthy_times_out_naming_the_last_status(serve_vllm):
    handler, url = serve_vllm("stuck", ready=lambda server: False)
    [result] = m.wait_all([endpoint("sparkfleet-vllm-stuck", url)], timeout=3, **FAST)
    assert result["ok"] is False and result["healthy_after"] is None and result["status"] == 503
    assert result["error"] == "no 200 from %s/health within 3 s (last: status 503, Service Unavailable)" % url
    assert handler.polls > 1 and handler.requests == []


def test_an_endpoint_nobody_listens_on_times_out_naming_the_error():
    url = closed_url()
    [result] = m.wait_all([endpoint("sparkfleet-vllm-gone", url)], timeout=1, **FAST)
    assert result["ok"] is False and result["status"] == -1
    assert result["error"].startswith("no 200 from %s/health within 1 s (last: " % url)
    assert "refused" in result["error"].lower()


def test_a_200_without_choices_is_no_completion_and_is_asked_again(serve_vllm):
    handler, url = serve_vllm("wedged", complete=no_choices)
    [result] = m.wait_all([endpoint("sparkfleet-vllm-wedged", url)], timeout=10, **FAST)
    assert result["ok"] is False and result["healthy_after"] is not None and result["tries"] == 2
    assert len(handler.requests) == 2
    assert "gave no completion in 2 tries: status 200, 0 choice(s), 3 completion token(s) (max_tokens=16)" in \
        result["error"]
    assert '"choices": []' in result["error"]


def test_a_second_try_that_answers_is_enough(serve_vllm):
    answers = iter([(500, {"error": "EngineCore busy"}), (200, completion("tiny-tp"))])
    handler, url = serve_vllm("slow", complete=lambda body, nth: next(answers))
    [result] = m.wait_all([endpoint("sparkfleet-vllm-slow", url)], timeout=10, **FAST)
    assert result["ok"] is True and result["tries"] == 2 and len(handler.requests) == 2


def test_an_endpoint_with_a_key_wants_it_and_the_key_is_never_shown(serve_vllm):
    handler, url = serve_vllm("keyed", key=KEY)
    without, with_key = m.wait_all([endpoint("without", url), endpoint("with", url, key=KEY)], timeout=10, **FAST)
    assert without["ok"] is False and without["status"] == 401 and with_key["ok"] is True
    assert "status 401" in without["error"] and "Unauthorized" in without["error"]
    assert handler.log.count(("keyed", "refused")) == 2 and len(handler.requests) == 1
    assert KEY not in json.dumps([without, with_key])


def test_endpoints_are_waited_for_at_the_same_time(serve_vllm):
    """Each server turns healthy only after its third poll and after the other server was polled at least
    once: waited for one after the other, the first could never become healthy (and would time out)."""
    handlers = {}

    def ready(server):
        return server.polls >= 3 and all(h.polls > 0 for h in handlers.values())

    handlers["a"], url_a = serve_vllm("a", ready=ready)
    handlers["b"], url_b = serve_vllm("b", ready=ready)
    results = m.wait_all([endpoint("a", url_a), endpoint("b", url_b)], timeout=5, interval=0.2, **ASK)
    assert [r["ok"] for r in results] == [True, True], [r["error"] for r in results]
    log = handlers["a"].log
    first_healthy = min(log.index(("a", "healthy")), log.index(("b", "healthy")))
    assert log.index(("a", "poll")) < first_healthy and log.index(("b", "poll")) < first_healthy
    assert [r["name"] for r in results] == ["a", "b"]


# ------------------------------------------------------------------ the module, run by ansible-playbook
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Wait for every endpoint in one call
      sparkfleet.gb10.vllm_ready:
        endpoints:
          - {name: sparkfleet-vllm-good, url: "{{ good }}", model: tiny-tp, api_key: "{{ key }}"}
          - {name: sparkfleet-vllm-gone, url: "{{ gone }}", model: tiny-tp, api_key: "{{ key }}"}
          - {name: sparkfleet-vllm-wedged, url: "{{ wedged }}", model: tiny-tp}
        timeout: 2
        interval: 0.1
        prompt: Say hello.
        max_tokens: 8
        tries: 2
        retry_delay: 0.1
      register: __ready
      ignore_errors: true

    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ __ready | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def test_the_module_names_each_endpoint_not_ready_and_never_the_key(tmp_path, serve_vllm):
    good, good_url = serve_vllm("good", key=KEY)
    _wedged, wedged_url = serve_vllm("wedged", complete=no_choices)
    proc, result = kept_result(tmp_path, PLAY, {"good": good_url, "gone": closed_url(), "wedged": wedged_url,
                                                "key": KEY}, KEY, env={"ANSIBLE_VERBOSITY": "3"})
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("2 of 3 vLLM endpoint(s) not ready: sparkfleet-vllm-gone: no 200 from ")
    assert "; sparkfleet-vllm-wedged: healthy after " in result["msg"] and "sparkfleet-vllm-good" not in result["msg"]
    assert [(e["name"], e["ok"]) for e in result["endpoints"]] == [
        ("sparkfleet-vllm-good", True), ("sparkfleet-vllm-gone", False), ("sparkfleet-vllm-wedged", False)]
    assert good.requests == [{"model": "tiny-tp", "prompt": "Say hello.", "max_tokens": 8, "temperature": 0}]
    # -vvv shows the module's arguments: the two keys masked, names and URLs as given
    assert proc.stdout.count("api_key: VALUE_SPECIFIED_IN_NO_LOG_PARAMETER") == 2
    assert "name: sparkfleet-vllm-good" in proc.stdout and "url: %s" % good_url in proc.stdout


# ------------------------------------------------------------------ the role's readiness gate
READINESS = """
- hosts: localhost
  gather_facts: false
  vars:
    _vllm_service_mine: %(mine)s
    _vllm_service_api_keys: {tiny: %(key)s}
    vllm_service_readiness_timeout_sec: "20"
    vllm_service_readiness_prompt: Say hello.
    vllm_service_readiness_max_tokens: 16
  tasks:
    - name: The role's readiness tasks
      ansible.builtin.include_tasks: %(repo)s/roles/vllm_service/tasks/readiness.yml
"""


def test_the_roles_readiness_waits_for_its_rank_0_services_with_their_keys_in_one_call(tmp_path, serve_vllm):
    """roles/vllm_service/tasks/readiness.yml: the services of the host that serve the API (rank 0), each at its
    call_address and port, asked for its served name with its key (none for a service without one)."""
    keyed, _keyed_url = serve_vllm("tiny", key=KEY, ready=lambda server: server.polls >= 2)
    coder, _coder_url = serve_vllm("coder", served="coder")
    mine = [{"name": "tiny", "unit": "sparkfleet-vllm-tiny", "rank": 0, "call_address": "127.0.0.1",
             "port": keyed.port, "served_name": "tiny-tp"},
            {"name": "coder", "unit": "sparkfleet-vllm-coder", "rank": 0, "call_address": "127.0.0.1",
             "port": coder.port, "served_name": "coder"},
            {"name": "big", "unit": "sparkfleet-vllm-big", "rank": 1, "call_address": "127.0.0.1",
             "port": closed_port(), "served_name": "big"}]
    proc = local_playbook(tmp_path, READINESS % {"mine": json.dumps(mine), "key": KEY, "repo": REPO},
                          env={"ANSIBLE_VERBOSITY": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert KEY not in proc.stdout and KEY not in proc.stderr
    assert "name: sparkfleet-vllm-tiny" in proc.stdout and "name: sparkfleet-vllm-coder" in proc.stdout
    assert "sparkfleet-vllm-big" not in proc.stdout
    assert keyed.requests == [{"model": "tiny-tp", "prompt": "Say hello.", "max_tokens": 16, "temperature": 0}]
    assert coder.requests == [{"model": "coder", "prompt": "Say hello.", "max_tokens": 16, "temperature": 0}]
    assert ("tiny", "refused") not in keyed.log
