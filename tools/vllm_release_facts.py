#!/usr/bin/env python3
"""What the pinned vLLM release can serve, read from the release's own files.

    tools/vllm_release_facts.py            (re)write plugins/module_utils/vllm_release.py
    tools/vllm_release_facts.py --check    fail if that file is not what the pinned release says

Reads, without importing them (no GPU, no torch needed), the locked vLLM wheel of
upstream/wheels (tools/contract_setup.py fetched it and checked its sha256) and the
transformers the contract venv installed at the rule book's transformers_version:
  vllm/model_executor/models/registry.py       the architectures vLLM implements
  vllm/transformers_utils/config.py            the model types vLLM parses itself (_CONFIG_REGISTRY)
  transformers/models/auto/configuration_auto.py  the model types transformers parses
  vllm/config/speculative.py                   speculative methods, MTP drafter types, and the
                                               targets whose own MTP layers can draft
  vllm/config/kernel.py                        --moe-backend's choices
  vllm/model_executor/layers/fused_moe/oracle/*.py  the MoE backends each weight kind accepts

Preflight judges every model entry against the generated module (plugins/module_utils/
model_entry.py), so bumping vllm_version in the rule book means: make contract-lock,
make release-facts, commit. `make contract` runs --check.
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import sys
import zipfile

from contract_setup import TOP, VENV, WHEELS, rulebook  # the same cache and rule book reader (tools/)

OUT = os.path.join(TOP, "plugins", "module_utils", "vllm_release.py")

REGISTRY = "vllm/model_executor/models/registry.py"
CONFIGS = "vllm/transformers_utils/config.py"
SPECULATIVE = "vllm/config/speculative.py"
KERNEL = "vllm/config/kernel.py"
ORACLES = "vllm/model_executor/layers/fused_moe/oracle/"
TRANSFORMERS_AUTO = "transformers/models/auto/configuration_auto.py"

# Registry tables whose architectures `vllm serve` runs as generative models (the rest pool).
GENERATIVE_TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
# The weight kinds of the MoE oracles, and the function of each that maps --moe-backend.
ORACLE_MAPPERS = {"unquantized": "map_unquantized_backend", "fp8": "map_fp8_backend",
                  "nvfp4": "map_nvfp4_backend", "mxfp4": "map_mxfp4_backend"}


class FactsError(Exception):
    pass


def vllm_sources(version):
    """{path: text} of the vLLM files read, from the locked wheel of this version."""
    wheels = sorted(glob.glob(os.path.join(WHEELS, "vllm-%s-*.whl" % version)))
    if not wheels:
        raise FactsError("no vllm-%s wheel in %s: run make upstream (tools/contract_setup.py)" % (version, WHEELS))
    with zipfile.ZipFile(wheels[-1]) as zf:
        names = set(zf.namelist())
        wanted = [REGISTRY, CONFIGS, SPECULATIVE, KERNEL] + sorted(n for n in names if n.startswith(ORACLES)
                                                                   and n.endswith(".py"))
        missing = [n for n in wanted if n not in names]
        if missing:
            raise FactsError("%s lacks %s: the release moved them; update tools/vllm_release_facts.py"
                             % (os.path.basename(wheels[-1]), ", ".join(missing)))
        return os.path.basename(wheels[-1]), {n: zf.read(n).decode() for n in wanted}


def transformers_source(version):
    found = glob.glob(os.path.join(VENV, "lib", "python3*", "site-packages", "transformers-%s.dist-info" % version))
    if not found:
        raise FactsError("transformers %s is not in %s: run make upstream" % (version, VENV))
    path = os.path.join(os.path.dirname(found[0]), TRANSFORMERS_AUTO)
    with open(path) as handle:
        return handle.read()


def _assigned(tree, name):
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return node.value
    raise FactsError("%s not found" % name)


def dict_keys(tree, name):
    value = _assigned(tree, name)
    if isinstance(value, ast.Dict):
        return [k.value for k in value.keys if isinstance(k, ast.Constant)]
    if isinstance(value, ast.Call):  # LazyConfigDict(a="...", ...) or OrderedDict([(k, v), ...])
        if value.keywords:
            return [k.arg for k in value.keywords if k.arg]
        if value.args and isinstance(value.args[0], (ast.List, ast.Tuple)):
            return [e.elts[0].value for e in value.args[0].elts if isinstance(e, ast.Tuple)]
    raise FactsError("%s is not a literal mapping" % name)


def literal_strings(tree, name, aliases=None):
    """The strings of a typing.Literal alias, nested aliases expanded."""
    aliases = aliases if aliases is not None else {}
    value = _assigned(tree, name)
    out = []
    elts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    for elt in elts:
        if isinstance(elt, ast.Constant):
            out.append(elt.value)
        elif isinstance(elt, ast.Name):
            out.extend(aliases.get(elt.id) or literal_strings(tree, elt.id, aliases))
    return out


def function(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise FactsError("function %s not found" % name)


def mapper_keys(tree, name):
    """The keys of the dict literal a map_*_backend function looks --moe-backend up in."""
    for node in ast.walk(function(tree, name)):
        if isinstance(node, ast.Dict) and node.keys and all(isinstance(k, ast.Constant) for k in node.keys):
            return [k.value for k in node.keys]
    raise FactsError("%s has no literal mapping" % name)


def _constants(node):
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def mtp_targets(tree):
    """Model types and architectures that SpeculativeConfig.hf_config_override turns into an MTP
    drafter of themselves: an `if` on hf_config.model_type / the first architecture whose body
    assigns hf_config.model_type."""
    types, archs = set(), set()
    for node in ast.walk(function(tree, "hf_config_override")):
        if not isinstance(node, ast.If):
            continue
        assigns = any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "model_type"
                                                        for t in s.targets) for s in node.body)
        if not assigns:
            continue
        for test in ast.walk(node.test):  # `a == "x"`, `a in ("x", "y")`, and either inside an `and`
            if not isinstance(test, ast.Compare):
                continue
            left = ast.unparse(test.left)
            values = [v for comp in test.comparators for v in _constants(comp)]
            if left.endswith(".model_type"):
                types.update(values)
            elif "architecture" in left:
                archs.update(values)
    return sorted(types), sorted(archs)


def facts():
    rb = rulebook()
    vllm_version, transformers_version = rb.setting("vllm_version"), rb.setting("transformers_version")
    wheel, src = vllm_sources(vllm_version)
    trees = {path: ast.parse(text) for path, text in src.items()}
    registry = trees[REGISTRY]
    all_tables = list(("_TEXT_GENERATION_MODELS", "_EMBEDDING_MODELS", "_LATE_INTERACTION_MODELS",
                       "_REWARD_MODELS", "_TOKEN_CLASSIFICATION_MODELS", "_SEQUENCE_CLASSIFICATION_MODELS",
                       "_MULTIMODAL_MODELS", "_SPECULATIVE_DECODING_MODELS",
                       "_TRANSFORMERS_SUPPORTED_MODELS", "_TRANSFORMERS_BACKEND_MODELS"))
    generative = sorted({a for t in GENERATIVE_TABLES for a in dict_keys(registry, t)})
    every = sorted({a for t in all_tables for a in dict_keys(registry, t)})
    spec = trees[SPECULATIVE]
    mtp_types = literal_strings(spec, "MTPModelTypes")
    methods = literal_strings(spec, "SpeculativeMethod")
    target_types, target_archs = mtp_targets(spec)
    oracles = {}
    for kind, mapper in ORACLE_MAPPERS.items():
        path = ORACLES + kind + ".py"
        if path not in trees:
            raise FactsError("%s lacks %s" % (wheel, path))
        oracles[kind] = mapper_keys(trees[path], mapper)
    transformers_types = dict_keys(ast.parse(transformers_source(transformers_version)), "CONFIG_MAPPING_NAMES")
    return {
        "VLLM_VERSION": vllm_version,
        "VLLM_WHEEL": wheel,
        "TRANSFORMERS_VERSION": transformers_version,
        "GENERATIVE_ARCHITECTURES": generative,
        "OTHER_ARCHITECTURES": sorted(set(every) - set(generative)),
        "VLLM_CONFIG_MODEL_TYPES": sorted(dict_keys(trees[CONFIGS], "_CONFIG_REGISTRY")),
        "TRANSFORMERS_MODEL_TYPES": sorted(transformers_types),
        "SPECULATIVE_METHODS": sorted(set(methods)),
        "MTP_MODEL_TYPES": sorted(set(mtp_types)),
        "MTP_TARGET_MODEL_TYPES": target_types,
        "MTP_TARGET_ARCHITECTURES": target_archs,
        "MOE_BACKENDS": literal_strings(trees[KERNEL], "MoEBackend"),
        "MOE_BACKENDS_BY_KIND": oracles,
    }


HEADER = '''# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# GENERATED by tools/vllm_release_facts.py from {wheel} and transformers {transformers}
# (the rule book's vllm_version and transformers_version). Do not edit: run `make release-facts`.
"""What vLLM {vllm} (with transformers {transformers}) can serve, as read from its own files.

Preflight (model_entry.release_problems) judges each model entry against these: its architecture
against vLLM's model registry, its model type against the configs vLLM or transformers parse, its
speculative method against the release's MTP support, and the MoE backend against what the
release's MoE oracle for the entry's weight kind accepts.
"""

from __future__ import annotations

'''
COMMENTS = {
    "GENERATIVE_ARCHITECTURES": "registry.py _TEXT_GENERATION_MODELS and _MULTIMODAL_MODELS",
    "OTHER_ARCHITECTURES": "registry.py's other tables (pooling, drafters, Transformers backend)",
    "VLLM_CONFIG_MODEL_TYPES": "transformers_utils/config.py _CONFIG_REGISTRY: model types vLLM parses itself",
    "TRANSFORMERS_MODEL_TYPES": "transformers' CONFIG_MAPPING_NAMES",
    "SPECULATIVE_METHODS": "config/speculative.py SpeculativeMethod",
    "MTP_MODEL_TYPES": "config/speculative.py MTPModelTypes: drafter model types read as method mtp",
    "MTP_TARGET_MODEL_TYPES": "SpeculativeConfig.hf_config_override: models whose own MTP layers draft",
    "MTP_TARGET_ARCHITECTURES": "SpeculativeConfig.hf_config_override: the same, matched by architecture",
    "MOE_BACKENDS": "config/kernel.py MoEBackend: --moe-backend's choices",
    "MOE_BACKENDS_BY_KIND": "fused_moe/oracle/<kind>.py map_<kind>_backend: what each weight kind accepts",
}


def _dict_item(key, values, width=120):
    """One item of a mapping to tuples, wrapped one element a line when longer than ``width``."""
    inline = "    %r: (%s),\n" % (key, ", ".join(repr(x) for x in values) + ("," if len(values) == 1 else ""))
    if len(inline) <= width:
        return inline
    return "    %r: (\n%s    ),\n" % (key, "".join("        %r,\n" % x for x in values))


def render(data):
    out = [HEADER.format(wheel=data["VLLM_WHEEL"], transformers=data["TRANSFORMERS_VERSION"],
                         vllm=data["VLLM_VERSION"])]
    for key, value in data.items():
        if key in COMMENTS:
            out.append("# %s\n" % COMMENTS[key])
        if isinstance(value, list):
            out.append("%s = (\n%s)\n" % (key, "".join("    %r,\n" % v for v in value)))
        elif isinstance(value, dict):
            out.append("%s = {\n%s}\n" % (key, "".join(_dict_item(k, v) for k, v in value.items())))
        else:
            out.append("%s = %r\n" % (key, value))
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args(argv)
    try:
        text = render(facts())
    except FactsError as err:
        print("release-facts: %s" % err, file=sys.stderr)
        return 1
    current = open(OUT).read() if os.path.exists(OUT) else ""
    if args.check:
        if current != text:
            print("release-facts: %s is not what the pinned release says: run make release-facts and commit it"
                  % os.path.relpath(OUT, TOP), file=sys.stderr)
            return 1
        print("release-facts: up to date (%s)" % os.path.relpath(OUT, TOP))
        return 0
    if current != text:
        with open(OUT, "w") as handle:
            handle.write(text)
    print("release-facts: wrote %s" % os.path.relpath(OUT, TOP))
    return 0


if __name__ == "__main__":
    sys.exit(main())
