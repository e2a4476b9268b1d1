# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The benchmark stage (playbooks/benchmark.yml, role fleet_benchmark): what it asks vLLM's own ``vllm bench serve``
to do, how it reads the result files back, and how a sweep reads against the decode roofline and the field's
figures (``roofline``).

One ``vllm bench serve`` per model and concurrency, from the fleet's virtualenv on the host that serves the
model's API, at fixed input and output lengths on random prompts (no dataset download), ``--ignore-eos`` so every
request generates the same number of tokens, greedy, a bounded request count. Each run saves its result JSON; a
point of the sweep is read from it (``point``), the points of a model become its summary (``summary``), and the
controller renders the summaries as a Markdown report (``markdown``) and a chart.

Pure Python: the role's filters, the report module, the contract test (the argv against the pinned release's
own parser) and the unit tests read it.
"""

from __future__ import annotations

import posixpath
import re
import time

from ansible_collections.sparkfleet.gb10.plugins.module_utils import roofline
from ansible_collections.sparkfleet.gb10.plugins.module_utils.role_vars import integer

# Percentiles the runs record and the report shows (--metric-percentiles).
PERCENTILES = (50, 99)
# Latencies the runs record (--percentile-metrics).
LATENCIES = ("ttft", "tpot", "itl", "e2el")
# The environment variable the pinned release's OpenAI request functions send as the bearer token (the contract
# tests read it from the release): the endpoint's key goes there, never into the argv.
KEY_VARIABLE = "OPENAI_API_KEY"
# What a figure measured on the simulation's CPU build is called: it is not a Spark's.
SIMULATED = "simulated (CPU build of vLLM, no GPU): no expected figure"


# What a list given with -e as text is read as (-e fleet_benchmark_concurrency=1,4 -e fleet_benchmark_models=qwen3):
# the numbers, the entry names it holds, not its characters.
NUMBERS = re.compile(r"[0-9]+")
NAMES = re.compile(r"[A-Za-z0-9_.-]+")
# The settings of a sweep (the role's variables of those names, without fleet_benchmark_).
SETTINGS = ("input_len", "output_len", "rounds", "min_prompts")


def concurrencies(value):
    """The sweep's concurrencies from ``fleet_benchmark_concurrency``: a list, or text naming one (``'1,4'``)."""
    return [integer(c) for c in (NUMBERS.findall(value) if isinstance(value, str) else value)]


def model_names(value):
    """The entry names of ``fleet_benchmark_models``: a list as it is, or text naming one (``'qwen3,llama'``)."""
    return NAMES.findall(value) if isinstance(value, str) else value


def endpoints_of(endpoints, names):
    """The endpoints benchmarked: those named in ``names``, every one where ``names`` is empty."""
    return list(endpoints) if len(names) == 0 else [e for e in endpoints if e["name"] in names]


def sweep_settings(values, clock=time.gmtime):
    """A sweep's ``input_len``, ``output_len``, ``rounds``, ``min_prompts`` and ``seed`` from the role's variables
    (``values``, without their prefix), as integers. A ``seed`` of 0: a new one at each reading (the time of day,
    HHMMSS in UTC, from ``clock``), so that a rerun's prompts are not served from the previous sweep's prefix
    cache."""
    out = dict((name, integer(values[name])) for name in SETTINGS)
    seed = integer(values["seed"])
    out["seed"] = seed if seed != 0 else integer(time.strftime("%H%M%S", clock()))
    return out


def num_prompts(concurrency, rounds, minimum):
    """Requests of one run: ``rounds`` full rounds of the concurrency, at least ``minimum``."""
    return max(int(minimum), int(concurrency) * int(rounds))


def result_filename(name, concurrency):
    """The result file of one run, in the result directory."""
    return "%s-c%d.json" % (name, int(concurrency))


def bench_argv(vllm_bin, endpoint, concurrency, settings, result_dir):
    """The argv of one ``vllm bench serve`` run against ``endpoint`` (``name``, ``call_address``, ``port``,
    ``served_name``, ``tokenizer``, ``trust_remote_code``) at ``concurrency``. ``settings``: ``input_len``,
    ``output_len``, ``rounds``, ``min_prompts``, ``seed``. The API key goes in the environment (OPENAI_API_KEY,
    which the pinned release's request function sends as a bearer token), never on the command line."""
    concurrency = int(concurrency)
    argv = [
        vllm_bin, "bench", "serve",
        "--backend", "vllm",
        "--base-url", "http://%s:%d" % (endpoint["call_address"], int(endpoint["port"])),
        "--endpoint", "/v1/completions",
        "--model", endpoint["served_name"],
        "--tokenizer", endpoint["tokenizer"],
        "--dataset-name", "random",
        "--random-input-len", str(int(settings["input_len"])),
        "--random-output-len", str(int(settings["output_len"])),
        "--num-prompts", str(num_prompts(concurrency, settings["rounds"], settings["min_prompts"])),
        "--max-concurrency", str(concurrency),
        "--request-rate", "inf",
        "--ignore-eos",
        "--temperature", "0",
        # A seed of its own per run: a concurrency's prompts are not the previous run's, served from the prefix
        # cache.
        "--seed", str(int(settings.get("seed", 0)) + concurrency),
        # As many requests as the run has streams first, unmeasured: the first request's cold start is no p99.
        "--num-warmups", str(concurrency),
        "--percentile-metrics", ",".join(LATENCIES),
        "--metric-percentiles", ",".join(str(p) for p in PERCENTILES),
        "--save-result",
        "--result-dir", result_dir,
        "--result-filename", result_filename(endpoint["name"], concurrency),
        "--disable-tqdm",
    ]
    if endpoint.get("trust_remote_code"):
        argv.append("--trust-remote-code")
    return argv


def tokenizer_of(entry, model_store_dir):
    """Where the host reads the model's tokenizer: the entry's ``tokenizer``, else its store copy (an entry with
    a ``source`` is served from ``<model_store_dir>/<name>``), else ``model`` (a path or a hub id)."""
    if entry.get("tokenizer"):
        return entry["tokenizer"]
    if entry.get("source") is not None:
        return posixpath.join(model_store_dir, entry["name"])
    return entry["model"]


def _number(result, key):
    value = result.get(key)
    return round(float(value), 3) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def point(result, errors=None):
    """One point of the sweep from the result JSON of one run: ``{concurrency, num_prompts, completed, failed,
    output_tok_s, request_s, duration_s, output_len, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, ..., error}``
    (``error``: the first error a failed request gave, else None). ``errors``: the run's printed error lines
    (``Error N: ...``; the release saves its ``errors`` only with ``--save-detailed``)."""
    completed = int(result.get("completed") or 0)
    failed = result.get("failed")
    failed = int(failed) if failed is not None else max(0, int(result.get("num_prompts") or 0) - completed)
    out = {
        "concurrency": int(result.get("max_concurrency") or 0),
        "num_prompts": int(result.get("num_prompts") or 0),
        "completed": completed,
        "failed": failed,
        "output_tok_s": _number(result, "output_throughput"),
        "request_s": _number(result, "request_throughput"),
        "duration_s": _number(result, "duration"),
        "output_len": round(float(result.get("total_output_tokens") or 0) / completed, 1) if completed else None,
        "error": next((e for e in list(errors or []) + list(result.get("errors") or []) if e), None),
    }
    for latency in LATENCIES:
        for p in PERCENTILES:
            out["%s_p%d_ms" % (latency, p)] = _number(result, "p%d_%s_ms" % (p, latency))
    return out


def failures(points):
    """Text of each point whose run lost requests, else []."""
    return ["concurrency %d: %d of %d requests failed (first error: %s)"
            % (p["concurrency"], p["failed"], p["num_prompts"], (p["error"] or "none given").strip()[:300])
            for p in points if p["failed"] or p["completed"] < p["num_prompts"]]


def headline(points):
    """The fleet table's cell: output tok/s at the lowest concurrency and at the best one, e.g.
    ``17.0@c1 36.4@c4``; '-' without points."""
    measured = [p for p in points if p.get("output_tok_s") is not None]
    if not measured:
        return "-"
    first = min(measured, key=lambda p: p["concurrency"])
    best = max(measured, key=lambda p: p["output_tok_s"])
    cells = ["%.1f@c%d" % (first["output_tok_s"], first["concurrency"])]
    if best is not first:
        cells.append("%.1f@c%d" % (best["output_tok_s"], best["concurrency"]))
    return " ".join(cells)


def summary(name, entry, points, compare=True, context_tokens=0, host=None):
    """What the report, the probe and the fleet table read of one model's sweep. ``compare``: the figures are a
    Spark's (not the simulation's CPU build), so each is read against the roofline and the published figure
    (``roofline.compare``; ``rows`` is None otherwise). ``context_tokens``: the tokens whose KV cache a decode step
    reads on average (the input and half the output)."""
    points = sorted(points, key=lambda p: p["concurrency"])
    rows = None
    if compare:
        rows = roofline.compare(entry, {p["concurrency"]: p["output_tok_s"] for p in points
                                        if p.get("output_tok_s") is not None}, context_tokens=context_tokens)
    figure = roofline.published(entry) if compare else None
    bound = roofline.decode_roofline(entry, context_tokens) if compare else None
    return {
        "name": name,
        "host": host,
        "model": entry.get("model"),
        "served_name": entry.get("served_name") or name,
        "tensor_parallel_size": int(entry.get("tensor_parallel_size") or 1),
        "checkpoint_format": entry.get("checkpoint_format"),
        "simulated": not compare,
        "points": points,
        "rows": rows,
        "published": figure,
        "roofline_tok_s": bound["tok_s"] if bound else None,
        "headline": headline(points),
        "warnings": [r["warning"] for r in rows or [] if r.get("warning")],
        "failures": failures(points),
    }


def _ms(value):
    return "-" if value is None else "%.0f" % value if value >= 100 else "%.1f" % value


def _share(value):
    return "-" if value is None else "%.0f%%" % (100 * value)


def markdown(models, title="Benchmark", settings=None, generated=None, chart=None):
    """The Markdown report of every model's summary."""
    lines = ["# %s" % title, ""]
    if generated:
        lines += ["Generated %s by playbooks/benchmark.yml (vLLM's `vllm bench serve`, random prompts, greedy, "
                  "`--ignore-eos`)." % generated, ""]
    if settings:
        lines += ["Input %s tokens, output %s tokens per request; %s rounds of each concurrency (at least %s "
                  "requests)." % (settings.get("input_len"), settings.get("output_len"), settings.get("rounds"),
                                  settings.get("min_prompts")), ""]
    if chart:
        lines += ["![output tok/s against concurrency](%s)" % chart, ""]
    for model in models:
        lines.append("## %s" % model["name"])
        lines.append("")
        lines.append("`%s` (%s), tensor parallel %d, served by %s%s%s." % (
            model.get("model"), model.get("checkpoint_format") or "?", model["tensor_parallel_size"],
            model.get("host") or "?", ", measured %s" % model["generated"] if model.get("generated") else "",
            "; " + SIMULATED if model["simulated"] else ""))
        lines.append("")
        head = ["concurrency", "output tok/s", "per stream", "req/s", "TTFT p50/p99 ms", "ITL p50/p99 ms", "failed"]
        if not model["simulated"]:
            head += ["roofline share", "published", "of published"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---:"] * len(head)) + "|")
        rows = {r["concurrency"]: r for r in model.get("rows") or []}
        for p in model["points"]:
            tok = p.get("output_tok_s")
            cells = [str(p["concurrency"]), "-" if tok is None else "%.1f" % tok,
                     "-" if tok is None else "%.1f" % (tok / p["concurrency"]),
                     "-" if p.get("request_s") is None else "%.2f" % p["request_s"],
                     "%s / %s" % (_ms(p.get("ttft_p50_ms")), _ms(p.get("ttft_p99_ms"))),
                     "%s / %s" % (_ms(p.get("itl_p50_ms")), _ms(p.get("itl_p99_ms"))),
                     "%d of %d" % (p["failed"], p["num_prompts"])]
            if not model["simulated"]:
                row = rows.get(p["concurrency"]) or {}
                field = row.get("published")
                cells += [_share(row.get("roofline_share")),
                          "-" if not field else ("%.1f" % field[0] if field[0] == field[1]
                                                 else "%.1f-%.1f" % (field[0], field[1])),
                          _share(row.get("published_share"))]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        if not model["simulated"]:
            bound = model.get("roofline_tok_s")
            lines.append("Decode roofline of one stream: %.1f tok/s (rule decode_roofline)." % bound if bound else
                         "Decode roofline: unknown (the entry needs active_params_b, or params_b for a dense model).")
            figure = model.get("published")
            lines.append("Published: %s (%s; source %s)." % (
                "; ".join("%s at concurrency %s" % (v if not isinstance(v, list) else "%s-%s" % tuple(v), c)
                          for c, v in sorted(figure["output_tok_s"].items(), key=lambda kv: int(kv[0]))),
                figure.get("setup", ""), figure.get("source")) if figure else
                "Published: none for this model and tensor parallel size (rule published_figures).")
            lines.append("")
        for warning in model.get("warnings") or []:
            lines += ["**Warning:** %s" % warning, ""]
    return "\n".join(lines).rstrip() + "\n"
