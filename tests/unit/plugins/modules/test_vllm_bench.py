# -*- coding: utf-8 -*-
"""The module that runs one vllm bench serve: the key reaches the run's process only through its environment,
the old result file is gone before the run, a run past its timeout is stopped, and the release's error lines
come back. A small Python program stands in for `vllm bench serve` (it writes what the release writes)."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from ansible_collections.sparkfleet.gb10.plugins.modules import vllm_bench

STAND_IN = textwrap.dedent("""
    import json, os, sys, time
    out, mode = sys.argv[1], sys.argv[2]
    if mode == "sleep":
        time.sleep(60)
    if mode == "fail":
        print("Failed requests during benchmark run detected (capping to 10):")
        print("Error 0: Bad Request")
        sys.exit(1)
    json.dump({"max_concurrency": 1, "completed": 2, "failed": 0, "num_prompts": 2,
               "key": os.environ.get("OPENAI_API_KEY"), "argv": sys.argv}, open(out, "w"))
""")


def _run(tmp_path, monkeypatch, mode, api_key="sk-test-123456789", timeout=30):
    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    program = tmp_path / "standin.py"
    program.write_text(STAND_IN)
    result = tmp_path / "tiny-c1.json"
    args = {"ANSIBLE_MODULE_ARGS": {"argv": [sys.executable, str(program), str(result), mode],
                                    "result_file": str(result), "api_key": api_key, "timeout": timeout}}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps(args)))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    outputs = []
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: outputs.append(kw) or sys.exit(0))
    # pylint: disable=unreachable  # pylint takes the sys.exit() in the lambda above for the end of this function
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: outputs.append(kw) or sys.exit(1))
    with pytest.raises(SystemExit):
        vllm_bench.main()
    return outputs[0], result


def test_the_key_reaches_the_run_in_its_environment_only(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "the-controllers-own")
    out, dummy = _run(tmp_path, monkeypatch, "ok")
    assert out["result"]["key"] == "sk-test-123456789"
    assert not [a for a in out["result"]["argv"] if "sk-test" in a]
    assert "sk-test" not in json.dumps({k: v for k, v in out.items() if k != "result"})
    out, dummy = _run(tmp_path, monkeypatch, "ok", api_key="")
    assert out["result"]["key"] is None  # no key: none sent, not the controller's


def test_an_old_result_is_gone_before_the_run(tmp_path, monkeypatch):
    (tmp_path / "tiny-c1.json").write_text(json.dumps({"completed": 99}))
    out, result = _run(tmp_path, monkeypatch, "fail")
    assert not os.path.exists(result) and "exited 1" in out["msg"]
    assert out["errors"] == ["Error 0: Bad Request"]


def test_a_run_past_its_timeout_is_stopped(tmp_path, monkeypatch):
    out, dummy = _run(tmp_path, monkeypatch, "sleep", timeout=1)
    assert "stopped after 1 s" in out["msg"] and out["elapsed"] < 30
