#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Apply the SM121 CUTLASS FP8 fallback to vLLM's w8a8_utils.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_sm121_patch
short_description: Make vLLM fall back from CUTLASS FP8 kernels to Triton on SM121 (GB10)
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.files
description:
  - vLLM's prebuilt C(_C.abi3.so) carries CUTLASS FP8 kernels for sm_120/sm_120a
    but not sm_121; on a GB10 C(cutlass_scaled_mm) fails with C(Error Internal).
  - This module edits C(vllm/model_executor/layers/quantization/utils/w8a8_utils.py)
    so that C(cutlass_fp8_supported()) and C(cutlass_block_fp8_supported()) return
    C(False) and the module-level constants C(CUTLASS_FP8_SUPPORTED) and
    C(CUTLASS_BLOCK_FP8_SUPPORTED) are C(False). Both halves are needed because
    callers use the functions directly as well as the constants.
  - Only the symbols the installed vLLM has are patched; a file with none of
    them is left alone and reported as not applicable.
  - The result is parsed again and each patched symbol checked before the file is
    written; a second run changes nothing.
options:
  path:
    description: Path of C(w8a8_utils.py) inside the virtualenv's site-packages.
    type: path
    required: true
  missing_ok:
    description:
      - When the file does not exist (vLLM not installed, or a build without
        the file), report C(applicable=false) instead of failing.
    type: bool
    default: false
  symbols:
    description: Functions to short-circuit to C(return False).
    type: list
    elements: str
    default: [cutlass_fp8_supported, cutlass_block_fp8_supported]
  constants:
    description: Module-level constants to set to C(False).
    type: list
    elements: str
    default: [CUTLASS_FP8_SUPPORTED, CUTLASS_BLOCK_FP8_SUPPORTED]
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Apply the CUTLASS FP8 fallback
  sparkfleet.gb10.vllm_sm121_patch:
    path: /opt/sparkfleet/venvs/vllm/lib/python3.12/site-packages/vllm/model_executor/layers/quantization/utils/w8a8_utils.py
"""

RETURN = r"""
applicable:
  description: Whether the file exists and has at least one of the symbols.
  returned: always
  type: bool
found:
  description: Symbols (functions and constants) present in the file.
  returned: always
  type: list
  elements: str
patched:
  description: Symbols this run changed.
  returned: always
  type: list
  elements: str
verified:
  description: Every symbol found is in its patched form in the resulting text.
  returned: always
  type: bool
"""

import ast
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

MARKER = "# sparkfleet.gb10: SM121 has no CUTLASS FP8 kernels, use the Triton fallback"
DEFAULT_FUNCTIONS = ("cutlass_fp8_supported", "cutlass_block_fp8_supported")
DEFAULT_CONSTANTS = ("CUTLASS_FP8_SUPPORTED", "CUTLASS_BLOCK_FP8_SUPPORTED")


class PatchError(Exception):
    """The file cannot be patched safely (it does not parse, or the result does not verify)."""


def _first_statement(func):
    """First statement of a function body, skipping a docstring."""
    body = func.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str) and len(body) > 1):
        return body[1]
    return body[0]


def _is_return_false(stmt):
    return (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Constant)
            and stmt.value.value is False)


def _module_constants(tree, names):
    """Module-level ``NAME = value`` (or annotated) assignments of the given names."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name = node.target.id
        else:
            continue
        if name in names:
            found[name] = node
    return found


def _module_functions(tree, names):
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names}


def inspect(source, functions=DEFAULT_FUNCTIONS, constants=DEFAULT_CONSTANTS):
    """Return ``{symbol: patched_bool}`` for every target symbol the source has."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise PatchError("does not parse as Python: %s" % exc)
    state = {}
    for name, func in _module_functions(tree, functions).items():
        state[name] = _is_return_false(_first_statement(func))
    for name, node in _module_constants(tree, constants).items():
        state[name] = isinstance(node.value, ast.Constant) and node.value.value is False
    return state


def patch_source(source, functions=DEFAULT_FUNCTIONS, constants=DEFAULT_CONSTANTS):
    """Patch the text. Returns ``(new_source, patched_symbols)``; idempotent.

    Functions get ``return False`` as their first statement (after a docstring),
    so the original body stays in place for reading but is unreachable.
    Constants are assigned ``False``. Each edited line carries MARKER.
    Raises PatchError when the result does not verify.
    """
    state = inspect(source, functions, constants)
    todo = [name for name, done in state.items() if not done]
    if not todo:
        return source, []
    tree = ast.parse(source)
    lines = source.splitlines(True)
    edits = []  # (line index, replace_count, new lines)
    funcs = _module_functions(tree, todo)
    for name, func in funcs.items():
        first = _first_statement(func)
        indent = lines[first.lineno - 1][: first.col_offset]
        edits.append((first.lineno - 1, 0, ["%sreturn False  %s\n" % (indent, MARKER)]))
    for name, node in _module_constants(tree, todo).items():
        start, end = node.lineno - 1, node.end_lineno
        indent = lines[start][: node.col_offset]
        edits.append((start, end - start, ["%s%s = False  %s\n" % (indent, name, MARKER)]))
    for index, count, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[index:index + count] = new
    result = "".join(lines)
    after = inspect(result, functions, constants)
    bad = sorted(name for name, done in after.items() if not done)
    if bad or set(after) != set(state):
        raise PatchError("patched text does not verify for %s" % (bad or sorted(set(state) ^ set(after))))
    return result, sorted(todo)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            missing_ok=dict(type="bool", default=False),
            symbols=dict(type="list", elements="str", default=list(DEFAULT_FUNCTIONS)),
            constants=dict(type="list", elements="str", default=list(DEFAULT_CONSTANTS)),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    result = dict(changed=False, applicable=False, found=[], patched=[], verified=False, path=path)
    if not os.path.exists(path):
        if module.params["missing_ok"]:
            module.exit_json(msg="%s does not exist; nothing to patch" % path, **result)
        module.fail_json(msg="%s does not exist: is vLLM installed in this virtualenv? "
                             "Set missing_ok=true to allow a vLLM without it." % path, **result)
    with open(path, "r", encoding="utf-8") as fh:
        before = fh.read()
    functions, constants = module.params["symbols"], module.params["constants"]
    try:
        found = inspect(before, functions, constants)
        after, patched = patch_source(before, functions, constants)
    except PatchError as exc:
        module.fail_json(msg="%s: %s" % (path, exc), **result)
    result.update(applicable=bool(found), found=sorted(found), patched=patched, verified=True,
                  changed=bool(patched))
    if patched and module._diff:
        result["diff"] = dict(before=before, after=after, before_header=path, after_header=path)
    if patched and not module.check_mode:
        st = os.stat(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".w8a8_utils.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(after)
            os.chmod(tmp, st.st_mode & 0o7777)
            os.chown(tmp, st.st_uid, st.st_gid)
            os.rename(tmp, path)
        except Exception:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        with open(path, "r", encoding="utf-8") as fh:
            written = inspect(fh.read(), functions, constants)
        if not all(written.values()):
            module.fail_json(msg="%s: written file does not verify: %s" % (path, written), **result)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
