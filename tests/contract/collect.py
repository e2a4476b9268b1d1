# -*- coding: utf-8 -*-
"""What the collection hands to vLLM, Ray and NCCL, collected from the real sources.

* every example inventory rendered by tests/contract/render.yml (the roles' own
  defaults, vars, preflight tasks and templates): the ExecStart argv and the
  environment of every vLLM unit, the Ray head/worker units and env files, the
  NCCL env file;
* the seeds' configurations (tests/unit/plugins/filter/seed_configs.py) and
  generated combinations of the model-entry keys (MODEL_ENTRY_SPEC), rendered
  through the real filter plugins/filter/vllm_args.py;
* the environment the rule book itself defines (kernel_env, nccl_env on the
  nominal GB10 facts).

Each item carries its origin, so a failure says where the flag or variable came from.
"""

from __future__ import annotations

import concurrent.futures
import glob
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
COLLECTIONS = os.path.join(TOP, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
sys.path.insert(0, os.path.join(TOP, "tests", "unit", "plugins", "filter"))

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import MANAGED_FLAGS, vllm_args  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import MODEL_ENTRY_SPEC  # noqa: E402

EXAMPLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TOP, "inventories", "*")) if os.path.isdir(p))
# The sim inventory's group_vars/all are links into tests/sim/group_vars/all: what the
# simulated hosts (vLLM's CPU build) get on top of the roles. Its variables are checked
# like the rest; vllm_cpu.yml's are named as sim-only in the origin.
SIM_ONLY_FILES = ("tests/sim/group_vars/all/vllm_cpu.yml", "tests/sim/group_vars/all/sim.yml")


# ----------------------------------------------------------------- rendering
def render_inventory(name, out_dir):
    """Run render.yml over one example inventory; {host: rendered dict}."""
    dest = os.path.join(out_dir, name)
    os.makedirs(dest, exist_ok=True)
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(HERE, "render.yml"),
           "-i", os.path.join(TOP, "inventories", name),
           "-e", "@" + os.path.join(TOP, "tests", "preflight", "offline.yml"),
           # what the example's comments ask a user to write before a run (its model revisions)
           "-e", "@" + os.path.join(TOP, "tests", "preflight", "example_inputs.yml"),
           "-e", "test_fixture_root=" + os.path.join(TOP, "tests", "fixtures", "gb10", "nominal"),
           "-e", "contract_out=" + dest]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, cwd=TOP, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError("rendering inventories/%s failed (rc %d):\n%s" % (name, proc.returncode,
                                                                             (proc.stdout + proc.stderr)[-4000:]))
    hosts = {}
    for path in sorted(glob.glob(os.path.join(dest, "*.json"))):
        with open(path) as handle:
            hosts[os.path.basename(path)[:-5]] = json.load(handle)
    return hosts


def render_all(names=None, workers=3):
    names = names or EXAMPLES
    out = tempfile.mkdtemp(prefix="sparkfleet-contract-")
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(names, pool.map(lambda n: render_inventory(n, out), names)))
    return results


RECORDED = os.path.join(HERE, "rendered")


def portable(rendered):
    """``rendered`` (one inventory's {host: ...}) as text without this checkout's path."""
    return json.dumps(rendered, indent=1, sort_keys=True).replace(TOP, "<top>") + "\n"


def record(rendered):
    """Write each inventory's rendering to tests/contract/rendered/<inventory>.json (make render-record)."""
    os.makedirs(RECORDED, exist_ok=True)
    for name, hosts in rendered.items():
        with open(os.path.join(RECORDED, name + ".json"), "w") as handle:
            handle.write(portable(hosts))


def unit_exec_start(text):
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            return shlex.split(line[len("ExecStart="):])
    raise ValueError("no ExecStart= line")


def unit_environment(text):
    env = {}
    for line in text.splitlines():
        if line.startswith("Environment="):
            for word in shlex.split(line[len("Environment="):]):
                key, dummy, value = word.partition("=")
                env[key] = value
    return env


def env_file(text):
    env = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, dummy, value = line.partition("=")
        words = shlex.split(value) if value else [""]
        env[key.strip()] = words[0] if words else ""
    return env


# -------------------------------------------------------------- where from
_SOURCES = None


def _source_texts():
    global _SOURCES
    if _SOURCES is None:
        paths = []
        for pattern in ("roles/*/defaults/*.yml", "roles/*/vars/*.yml", "roles/*/templates/*.j2", "roles/*/tasks/*.yml",
                        "plugins/filter/*.py", "plugins/module_utils/*.py", "inventories/*/group_vars/*/*.yml",
                        "inventories/*/group_vars/*.yml", "inventories/*/host_vars/*.yml"):
            paths.extend(sorted(glob.glob(os.path.join(TOP, pattern))))
        _SOURCES = {}
        for path in paths:
            real = os.path.relpath(os.path.realpath(path), TOP)
            with open(path) as handle:
                _SOURCES.setdefault(real, handle.read())
    return _SOURCES


def _rules_naming(name):
    found = []
    for item in rulebook.RULES:
        if name in json.dumps(item.settings) or name in item.title:
            found.append("rule " + item.id)
    if name in rulebook.kernel_env():
        found.append("rule book kernel_env()")
    return found


def where_set(name):
    """Files and rules that spell this variable or flag out (where to look when it fails)."""
    pattern = re.compile(r"(?<![A-Za-z0-9_-])%s(?![A-Za-z0-9_-])" % re.escape(name))
    files = [path for path, text in sorted(_source_texts().items()) if pattern.search(text)]
    marked = ["%s (sim-only: vLLM's CPU build)" % f if f in SIM_ONLY_FILES else f for f in files]
    return _rules_naming(name) + marked


def flag_origin(flag):
    """The entry key or rule that makes vllm_args emit a flag."""
    source = MANAGED_FLAGS.get(flag)
    if source is None:
        return "extra_args"
    return source if source.startswith("rule ") else "entry key '%s'" % source


# ------------------------------------------------------------------ argvs
def collect(rendered):
    """{'vllm': [...], 'ray': [...], 'env': [...]} from rendered inventories (render_all)."""
    items = {"vllm": [], "ray": [], "env": []}
    for inv, hosts in sorted(rendered.items()):
        for host, out in sorted(hosts.items()):
            where = "inventories/%s, host %s" % (inv, host)
            for name, unit in sorted((out.get("vllm_units") or {}).items()):
                label = "%s, vLLM unit of model entry '%s' (roles/vllm_service/templates/vllm.service.j2)" % (where, name)
                items["vllm"].append({"argv": unit_exec_start(unit), "origin": label})
                for key, value in unit_environment(unit).items():
                    items["env"].append({"name": key, "value": value, "origin": label})
            for kind in ("head", "worker"):
                if out.get("ray_%s_unit" % kind):
                    items["ray"].append({"argv": unit_exec_start(out["ray_%s_unit" % kind]),
                                         "origin": "%s, Ray %s, roles/ray/templates/ray.service.j2 (its ray_args "
                                                   "call)" % (where, kind)})
                if out.get("ray_%s_env" % kind):
                    for key, value in env_file(out["ray_%s_env" % kind]).items():
                        items["env"].append({"name": key, "value": value,
                                             "origin": "%s, Ray %s, roles/ray/templates/ray.env.j2" % (where, kind)})
            for key, value in env_file(out.get("nccl_env")).items():
                items["env"].append({"name": key, "value": value,
                                     "origin": "%s, roles/nccl/templates/nccl.env.j2" % where})
    return items


def seed_argvs():
    from seed_configs import SEEDS
    out = []
    for name, seed in sorted(SEEDS.items()):
        argv = vllm_args(seed["entry"], {}, seed["cluster"], host="seed")
        out.append({"argv": argv, "origin": "seed configuration '%s' (%s, tests/unit/plugins/filter/seed_configs.py)"
                    % (name, seed["source"])})
    return out


BASE = {"name": "gen", "model": "org/model", "checkpoint_format": "bf16"}
LAYOUTS = [
    ("single node", {"nnodes": 1}, {}),
    ("mp TP=2 head", {"executor": "mp", "nnodes": 2, "node_rank": 0, "master_addr": "192.168.100.10"},
     {"tensor_parallel_size": 2}),
    ("mp TP=2 follower", {"executor": "mp", "nnodes": 2, "node_rank": 1, "master_addr": "192.168.100.10"},
     {"tensor_parallel_size": 2}),
    ("ray TP=2", {"executor": "ray", "nnodes": 2}, {"tensor_parallel_size": 2}),
    ("ray PP=3", {"executor": "ray", "nnodes": 3}, {"pipeline_parallel_size": 3}),
    ("mp PP=3 head", {"executor": "mp", "nnodes": 3, "node_rank": 0, "master_addr": "192.168.100.10"},
     {"pipeline_parallel_size": 3}),
]


def _seen_values():
    """Values of each entry key used anywhere: inventories and seeds."""
    import yaml
    from seed_configs import SEEDS
    seen = {}

    def add(entry):
        for key, value in entry.items():
            if key in MODEL_ENTRY_SPEC and isinstance(value, (str, int, float, bool)):
                seen.setdefault(key, set()).add(value)
            elif key == "speculative" and isinstance(value, dict):
                seen.setdefault(key, []).append(value)

    for seed in SEEDS.values():
        add(seed["entry"])
    for path in glob.glob(os.path.join(TOP, "inventories", "*", "*_vars", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        for entry in data.get("sparkfleet_models") or []:
            if isinstance(entry, dict):
                add(entry)
    return seen


def generated_argvs():
    """Model-entry keys one at a time over every value they can take (choices, both booleans,
    every value seen), on each cluster layout; plus checkpoint format x MoE x speculative.
    Entries the filter refuses are not rendered (the collection never starts them)."""
    seen = _seen_values()
    variants = []
    for key, spec in sorted(MODEL_ENTRY_SPEC.items()):
        if key in ("name", "model", "extra_args", "api_key_file", "allow_enforce_eager_reason",
                   "correctness_check_off_reason"):
            continue
        if key == "enforce_eager":
            variants.append({"enforce_eager": True, "allow_enforce_eager_reason": "contract test"})
            continue
        if key == "correctness_check":
            variants.append({"correctness_check": False, "correctness_check_off_reason": "contract test"})
            continue
        if key == "speculative":
            values = list(seen.get("speculative", [])) + [{"num_speculative_tokens": 1}]
        elif spec.get("choices"):
            values = list(spec["choices"])
        elif spec["type"] == "bool":
            values = [True, False]
        else:
            values = sorted(seen.get(key, set()), key=str)
        if key == "kv_cache_dtype":
            values = sorted(set(values) | set(rulebook.setting("kv_cache_dtype_allowed")))
        if key == "quantization":
            values = sorted(set(values) | set(rulebook.setting("quantization_runtime_from_bf16")))
        for value in values:
            variants.append({key: value})
    models = {"mxfp4": "openai/gpt-oss-120b"}
    for fmt, moe, spec in itertools.product(sorted(rulebook.setting("quantization_by_checkpoint_format")),
                                            (False, True), (None, {"num_speculative_tokens": 2})):
        variant = {"checkpoint_format": fmt, "moe": moe, "model": models.get(fmt, "org/model")}
        if spec:
            variant["speculative"] = spec
        variants.append(variant)
    variants.append({"mamba": True, "enable_prefix_caching": True})
    variants.append({"moe": True, "enable_expert_parallel": True})
    out, refused = [], 0
    for (layout, cluster, sizes), variant in itertools.product(LAYOUTS, variants):
        entry = dict(BASE, **sizes)
        entry.update(variant)
        if entry.get("checkpoint_format") == "mxfp4":
            entry["model"] = models["mxfp4"]
        cluster = dict(cluster, vllm_bin="/opt/sparkfleet/venv/bin/vllm")
        try:
            argv = vllm_args(entry, {}, cluster, host="generated")
        except AnsibleFilterError:
            refused += 1
            continue
        out.append({"argv": argv, "origin": "generated model entry %s on %s (plugins/filter/vllm_args.py)"
                    % (json.dumps(variant, sort_keys=True), layout)})
    return out, refused


def rulebook_env():
    """The environment the rule book defines for every vLLM process (kernel_env)."""
    return [{"name": k, "value": str(v), "origin": "rule book kernel_env() (plugins/module_utils/rulebook.py)"}
            for k, v in sorted(rulebook.kernel_env().items())]


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: collect.py --record  (re-record tests/contract/rendered/ after a deliberate change)")
    record(render_all())
