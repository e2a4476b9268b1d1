#!/usr/bin/env python3
"""Runs inside the contract venv (tools/contract_setup.py): asks the pinned releases themselves.

    upstream_probe.py --smoke          build both parsers, print the versions (setup's check)
    upstream_probe.py < request.json   answer a request of the contract test (JSON on stdout)
    upstream_probe.py --release < req  only the MoE verdicts and the release facts (no parser, no stand-in)

Request: {"vllm_argvs": [[...], ...], "ray_argvs": [[...], ...], "moe_checks": [[kind, backend], ...],
"mtp_targets": [model_type, ...]}; each argv as the collection renders it (starting with
.../vllm serve or .../ray start); each MoE check a weight kind and the --moe-backend rendered for it.
Answer:  versions; per vllm argv the real `vllm serve` parser's verdict and the
JSON options checked against their config classes; per ray argv the verdict
of Ray's click command `ray start`; the names vllm/envs.py reads; the RAY_*
names in Ray's Python sources and compiled into _raylet.so; per MoE check the verdict
of the release's own backend mapping for that weight kind (past parsing: what model
build raises); and the release's registry, config model types and MTP conversions.

Values: argparse checks choices and types; a value the parser takes as a string
(--attention-backend) is then put through its config class's own field
validators and pydantic type, as vLLM does when it builds the config.

The only stand-in: vLLM resolves its platform (DeviceConfig's default) while the
parser is built, and its CUDA platform loads vllm/_C.abi3.so, compiled against
the CUDA torch the real GB10 venv has. A bare Platform that says "cuda" (vLLM's
own interface class, no kernels) is set as the current platform instead: on
the pinned release no platform overrides pre_register_and_update, the one platform hook the
parser calls, so the parser is the one a GB10 builds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import typing

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


class ParseError(Exception):
    pass


def _use_cuda_stand_in(capability=None):
    """Set vLLM's current platform to its own Platform interface saying 'cuda', without the CUDA kernels (see the
    module doc); with ``capability`` ((12, 1) for GB10) it also answers get_device_capability with it."""
    from vllm import platforms
    from vllm.platforms.interface import DeviceCapability, Platform, PlatformEnum

    class ParserOnlyCuda(Platform):
        _enum = PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"

        @classmethod
        def get_device_capability(cls, device_id=0):
            return None if capability is None else DeviceCapability(*capability)

    platforms._current_platform = ParserOnlyCuda()


def vllm_parser():
    _use_cuda_stand_in()
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    class Strict(FlexibleArgumentParser):
        def error(self, message):
            raise ParseError(message)

    # As vllm/entrypoints/cli/serve.py builds the `serve` subcommand (before 0.20 serve.py added --grpc itself).
    parser = make_arg_parser(Strict(prog="vllm serve"))
    if "--grpc" not in parser._option_string_actions:  # pylint: disable=protected-access
        parser.add_argument("--grpc", action="store_true", default=False)
    return parser


def _unwrap(hint):
    """Optional[X] / X | None -> [X, ...] without NoneType."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union,) or type(hint).__name__ == "UnionType":
        return [a for a in args if a is not type(None)]
    return [hint]


def _config_class(dest):
    """The config class a JSON option of `vllm serve` is built into (None: a plain dict)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm import config
    explicit = {"speculative_config": "SpeculativeConfig"}  # EngineArgs keeps it a dict; VllmConfig builds this
    if dest in explicit:
        return getattr(config, explicit[dest])
    try:
        hint = typing.get_type_hints(EngineArgs).get(dest)
    except Exception:  # pragma: no cover - annotations that do not resolve
        hint = EngineArgs.__annotations__.get(dest)
    for cand in _unwrap(hint) if hint is not None else []:
        if isinstance(cand, type) and dataclasses.is_dataclass(cand):
            return cand
    return None


def check_json_option(flag, dest, value):
    """Problems of one JSON option's keys and Literal values against its config class."""
    cls = _config_class(dest)
    if cls is None or not isinstance(value, dict):
        return {"flag": flag, "class": None, "problems": []}
    fields = {f.name for f in dataclasses.fields(cls)}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # pragma: no cover
        hints = {}
    problems = []
    for key in sorted(value):
        if key not in fields:
            problems.append("%s has no field %r (fields: %s)" % (cls.__name__, key, ", ".join(sorted(fields))))
            continue
        for cand in _unwrap(hints.get(key, object)):
            if typing.get_origin(cand) is typing.Literal:
                if value[key] not in typing.get_args(cand):
                    problems.append("%s.%s is %r; %s accepts %s" % (
                        cls.__name__, key, value[key], cls.__name__, ", ".join(map(repr, typing.get_args(cand)))))
    return {"flag": flag, "class": cls.__module__ + "." + cls.__name__, "problems": problems}


def config_fields(parser):
    """{dest: (config class, field)} for the options vLLM adds per config class (argument group
    titled with the class name, e.g. AttentionConfig: --attention-backend -> backend)."""
    from vllm import config
    found = {}
    for group in parser._action_groups:
        cls = getattr(config, group.title or "", None)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            continue
        names = {f.name for f in dataclasses.fields(cls)}
        for action in group._group_actions:
            parts = action.dest.split("_")
            for i in range(len(parts)):
                if "_".join(parts[i:]) in names:
                    found[action.dest] = (cls, "_".join(parts[i:]))
                    break
    return found


def check_field_value(cls, field, value):
    """The value as the config class would take it: its mode='before' field validators, then
    pydantic against the field's type. A message when refused, None when taken or when the
    type cannot be checked alone (counted as unchecked by the caller)."""
    import pydantic
    decorators = getattr(cls, "__pydantic_decorators__", None)
    try:
        if decorators is not None:
            for dec in decorators.field_validators.values():
                if field in dec.info.fields and dec.info.mode == "before":
                    value = dec.func(value) if not hasattr(dec.func, "__func__") else dec.func.__func__(cls, value)
        hint = typing.get_type_hints(cls)[field]
        pydantic.TypeAdapter(hint).validate_python(value)
    except (pydantic.ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        return "%s.%s refuses %r: %s" % (cls.__name__, field, value, " ".join(first[:3])[:300])
    except Exception:  # noqa: BLE001 - a type pydantic cannot build alone: not this check's business
        return None
    return None


def vllm_verdict(parser, argv, fields=None):
    args = list(argv)
    if len(args) >= 2 and args[1] == "serve":
        args = args[2:]
    try:
        ns = parser.parse_args(args)
    except ParseError as exc:
        return {"ok": False, "error": str(exc), "json": []}
    except SystemExit as exc:  # a type function that exits
        return {"ok": False, "error": "exit %s" % exc.code, "json": []}
    flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    # What `vllm serve` checks right after parsing (ServeSubcommand.validate).
    from vllm.entrypoints.openai.cli_args import validate_parsed_serve_args
    try:
        validate_parsed_serve_args(ns)
    except Exception as exc:  # noqa: BLE001 - the CLI turns any of these into an exit
        return {"ok": False, "error": str(exc), "json": []}
    checked = []
    for flag, dest, plugin, registry in (
            ("--tool-call-parser", "tool_call_parser", "tool_parser_plugin", "vllm.tool_parsers:ToolParserManager"),
            ("--reasoning-parser", "reasoning_parser", "reasoning_parser_plugin",
             "vllm.reasoning:ReasoningParserManager")):
        value = getattr(ns, dest, None)
        if value and not getattr(ns, plugin, None):
            module, dummy, name = registry.partition(":")
            names = getattr(__import__(module, fromlist=[name]), name).list_registered()
            checked.append({"flag": flag, "class": name, "problems": [] if value in names else [
                "%s %r is not a parser vLLM registers (%s)" % (flag, value, ", ".join(sorted(names)))]})
    for action in parser._actions:
        if not set(action.option_strings) & flags:
            continue
        value = getattr(ns, action.dest, None)
        if isinstance(value, dict):
            checked.append(check_json_option(action.option_strings[0], action.dest, value))
        elif fields and action.dest in fields and value is not None:
            problem = check_field_value(fields[action.dest][0], fields[action.dest][1], value)
            checked.append({"flag": action.option_strings[0], "class": fields[action.dest][0].__name__,
                            "problems": ["%s: %s" % (action.option_strings[0], problem)] if problem else []})
    bad = [p for c in checked for p in c["problems"]]
    return {"ok": not bad, "error": "; ".join(bad) if bad else None, "json": checked}


def bench_parser():
    """The parser of `vllm bench serve`, built as vllm/entrypoints/cli/benchmark/serve.py builds it."""
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    class Strict(FlexibleArgumentParser):
        def error(self, message):
            raise ParseError(message)

    parser = Strict(prog="vllm bench serve")
    add_cli_args(parser)
    return parser


def bench_verdict(parser, argv):
    """Whether `vllm bench serve` parses ``argv`` (the program and the subcommands first), with the values the
    benchmark reads back."""
    args = list(argv)
    if args[1:3] == ["bench", "serve"]:
        args = args[3:]
    try:
        ns = parser.parse_args(args)
    except ParseError as exc:
        return {"ok": False, "error": str(exc)}
    except SystemExit as exc:
        return {"ok": False, "error": "exit %s" % exc.code}
    return {"ok": True, "error": None, "values": {k: getattr(ns, k, None) for k in (
        "backend", "dataset_name", "max_concurrency", "num_prompts", "random_input_len", "random_output_len",
        "ignore_eos", "temperature", "save_result", "result_dir", "result_filename", "percentile_metrics",
        "metric_percentiles", "endpoint", "base_url", "tokenizer", "model")}}


def bench_key_variables():
    """The environment variables the benchmark's OpenAI request functions read (the API key's)."""
    import inspect
    import re

    from vllm.benchmarks.lib import endpoint_request_func
    return sorted(set(re.findall(r"os\.environ\.get\(\s*[\"']([A-Z_]+)[\"']", inspect.getsource(endpoint_request_func))))


def vllm_options(parser):
    return sorted({o for a in parser._actions for o in a.option_strings})


def ray_start():
    from ray.scripts.scripts import start
    return start


def ray_verdict(start, argv):
    import click
    args = list(argv)
    if len(args) >= 2 and args[1] == "start":
        args = args[2:]
    try:
        start.make_context("ray start", args)
    except click.exceptions.ClickException as exc:
        return {"ok": False, "error": exc.format_message()}
    return {"ok": True, "error": None}


IDENT = re.compile(rb"(?<![A-Za-z0-9_])RAY_[A-Za-z0-9_]+")


def ray_env_names():
    import ray
    root = os.path.dirname(ray.__file__)
    py, so = set(), set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith(".py"):
                with open(path, "rb") as handle:
                    py.update(m.decode() for m in re.findall(rb"[\"'](RAY_[A-Za-z0-9_]+)[\"']", handle.read()))
            elif name == "_raylet.so":
                with open(path, "rb") as handle:
                    # NUL-terminated C strings that are exactly a name (RayConfig reads RAY_<entry>).
                    so.update(m.decode() for m in re.findall(rb"(?<=\x00)(RAY_[A-Za-z0-9_]+)(?=\x00)", handle.read()))
    return sorted(py), sorted(so)


def vllm_vocabulary(parser):
    """The names vLLM accepts for the values the rule book picks or forbids."""
    from vllm.config import SpeculativeConfig
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    choices = {a.dest: sorted(a.choices) for a in parser._actions if a.choices}
    methods = []
    for cand in _unwrap(typing.get_type_hints(SpeculativeConfig)["method"]):
        if typing.get_origin(cand) is typing.Literal:
            methods.extend(typing.get_args(cand))
    return {
        "--moe-backend": choices.get("moe_backend", []),
        "--kv-cache-dtype": choices.get("kv_cache_dtype", []),
        "--attention-backend": sorted(m.name for m in AttentionBackendEnum),
        "--speculative-config method": sorted(methods),
    }


def moe_verdicts(checks):
    """Each [weight kind, --moe-backend] through the release's own mapping of that kind's MoE oracle
    (fused_moe/oracle/<kind>.py map_<kind>_backend), which raises ValueError at model build."""
    import importlib
    out = []
    for kind, backend in checks:
        module = importlib.import_module("vllm.model_executor.layers.fused_moe.oracle.%s" % kind)
        try:
            getattr(module, "map_%s_backend" % kind)(backend)
        except ValueError as exc:
            out.append({"kind": kind, "backend": backend, "ok": False, "error": str(exc)})
            continue
        out.append({"kind": kind, "backend": backend, "ok": True, "error": None})
    return out


def release_facts(mtp_targets):
    """What the release says at run time, to hold the generated plugins/module_utils/vllm_release.py
    (read from the same files without importing them) against: its registry, the model types its
    configs and its transformers parse, and what hf_config_override makes of each MTP target."""
    from transformers import PretrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from vllm.config import SpeculativeConfig
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.transformers_utils.config import _CONFIG_REGISTRY
    converted = {}
    for model_type in mtp_targets:
        cfg = PretrainedConfig(architectures=["Probe"], num_nextn_predict_layers=1)
        cfg.model_type = model_type
        try:
            converted[model_type] = SpeculativeConfig.hf_config_override(cfg).model_type
        except Exception as exc:  # noqa: BLE001 - reported, judged by the test
            converted[model_type] = "error: %s" % exc
    return {
        "supported_archs": sorted(ModelRegistry.get_supported_archs()),
        "vllm_config_model_types": sorted(_CONFIG_REGISTRY),
        "transformers_model_types": sorted(CONFIG_MAPPING_NAMES),
        "mtp_converted": converted,
    }


def vllm_env_names():
    from vllm import envs
    return sorted(envs.environment_variables)


def release_answer(request):
    """The MoE verdicts, the release facts and the benchmark's parser verdicts, from a fresh interpreter of this
    venv (vllm.benchmarks imports the quantization modules too): the parser's CUDA
    stand-in must not be the platform there (vLLM's quantization modules ask the platform for CUTLASS
    kernels at import), so vLLM resolves its own platform, as on any machine without a GPU."""
    import subprocess
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--release"], input=json.dumps(request),
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit("upstream_probe --release failed:\n%s" % run.stderr[-4000:])
    return json.loads(run.stdout)


def main():
    if "--release" in sys.argv:
        request = json.load(sys.stdin)
        answer_fd = os.dup(1)
        os.dup2(2, 1)  # vLLM logs to stdout: only the answer goes there
        bench = bench_parser()
        answer = {"moe": moe_verdicts(request.get("moe_checks", [])),
                  "release_facts": release_facts(request.get("mtp_targets", [])),
                  "bench": [bench_verdict(bench, argv) for argv in request.get("bench_argvs", [])],
                  "bench_key_variables": bench_key_variables()}
        with os.fdopen(answer_fd, "w") as out:
            json.dump(answer, out)
        return 0
    if "--smoke" in sys.argv:
        parser = vllm_parser()
        start = ray_start()
        import ray
        import vllm
        print("upstream_probe: vllm %s serve parser (%d options), ray %s start (%d params)" % (
            vllm.__version__, len(vllm_options(parser)), ray.__version__, len(start.params)))
        return 0
    # Parsers first, then the request: the test starts this while it renders the inventories.
    parser = vllm_parser()
    start = ray_start()
    request = json.load(sys.stdin)
    import ray
    import vllm
    fields = config_fields(parser)
    py, so = ray_env_names()
    answer = {
        "vllm_version": vllm.__version__,
        "ray_version": ray.__version__,
        "vllm_options": vllm_options(parser),
        "vllm_env": vllm_env_names(),
        "vllm_vocabulary": vllm_vocabulary(parser),
        "ray_env_python": py,
        "ray_env_raylet": so,
        "ray_start_options": sorted({o for p in start.params for o in list(p.opts) + list(p.secondary_opts)}),
        "vllm": [vllm_verdict(parser, argv, fields) for argv in request.get("vllm_argvs", [])],
        "ray": [ray_verdict(start, argv) for argv in request.get("ray_argvs", [])],
    }
    answer.update(release_answer({"moe_checks": request.get("moe_checks", []),
                                  "mtp_targets": request.get("mtp_targets", []),
                                  "bench_argvs": request.get("bench_argvs", [])}))
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
