# -*- coding: utf-8 -*-
"""The benchmark report module: the chart is a real PNG drawn by matplotlib, the same bytes for the same figures
(a rerun of an unchanged sweep rewrites nothing), and the report, chart and figures land in the directory."""

from __future__ import annotations

import json
import struct

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import benchmark
from ansible_collections.sparkfleet.gb10.plugins.modules import benchmark_report

QWEN = {"name": "qwen3", "model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq",
        "active_params_b": 22, "tensor_parallel_size": 2}


def _points(figures):
    return [{"concurrency": c, "num_prompts": 8, "completed": 8, "failed": 0, "output_tok_s": v, "request_s": 0.1,
             "error": None} for c, v in figures]


@pytest.fixture
def models():
    return [benchmark.summary("qwen3", QWEN, _points([(1, 17.0), (2, 24.1), (4, 36.4)]), compare=True, host="spark-1"),
            benchmark.summary("tiny", {"name": "tiny", "model": "/m"}, _points([(1, 90.0), (2, 150.0)]), compare=False)]


def _png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_the_chart_is_a_png_and_the_same_for_the_same_figures(models):
    first = benchmark_report.chart_png(models, "Benchmark of two-spark")
    assert _png_size(first) == (800, 480)
    assert benchmark_report.chart_png(models, "Benchmark of two-spark") == first
    changed = [dict(models[0], points=_points([(1, 17.0), (2, 24.1), (4, 30.0)]))] + models[1:]
    assert benchmark_report.chart_png(changed, "Benchmark of two-spark") != first


def test_writing_the_same_bytes_again_changes_nothing(tmp_path):
    path = str(tmp_path / "report.md")
    assert benchmark_report._write(path, b"one", False) is True
    assert benchmark_report._write(path, b"one", False) is False
    assert benchmark_report._write(path, b"two", True) is True  # check mode: says it would change
    assert open(path, "rb").read() == b"one"


def test_the_module_writes_report_chart_and_figures(tmp_path, models, monkeypatch):
    """main() end to end through AnsibleModule's own argument handling."""
    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    dest = tmp_path / "bench"
    args = {"ANSIBLE_MODULE_ARGS": {"models": models, "dest": str(dest), "title": "Benchmark of sim",
                                    "settings": {"input_len": 256, "output_len": 128}, "generated": "2026-11-27"}}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps(args)))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    with pytest.raises(SystemExit):
        benchmark_report.main()
    assert sorted(p.name for p in dest.iterdir()) == ["report.md", "results.json", "tok_s.png"]
    assert "![output tok/s against concurrency](tok_s.png)" in (dest / "report.md").read_text()
    assert [m["name"] for m in json.loads((dest / "results.json").read_text())["models"]] == ["qwen3", "tiny"]
    _png_size((dest / "tok_s.png").read_bytes())


def test_a_sweep_of_some_models_keeps_the_others_figures(tmp_path, models):
    figures = tmp_path / "results.json"
    figures.write_text(json.dumps({"models": [dict(models[0], host="spark-1", headline="old"),
                                              dict(models[1], host="spark-2", headline="other")]}))
    rerun = [dict(models[0], host="spark-1", headline="new")]
    kept = benchmark_report.merged(rerun, str(figures))
    assert [(m["name"], m["host"], m["headline"]) for m in kept] == [("qwen3", "spark-1", "new"),
                                                                     ("tiny", "spark-2", "other")]
    assert benchmark_report.merged(rerun, str(tmp_path / "none.json")) == rerun
