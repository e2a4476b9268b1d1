#!/usr/bin/env python3
"""Every environment variable the NCCL library of one git tag reads, from its source.

    tools/nccl_params.py [--git-dir DIR] [--tag TAG] [--out FILE]

TAG defaults to the rule book's nccl_git_tag; DIR to the local mirror of
NVIDIA/nccl (NCCL's repository cannot be reached from `make setup`, so the
list is generated here and committed: tests/contract/nccl_params-<tag>.txt).
The contract test refuses a list whose tag is not the rule book's.

Only the library (src/) counts; ext-*/ are example plugins built separately.
What is found, each with where:
  NCCL_PARAM(Name, "ENV", default)    the param macro of src/include/param.h: NCCL_ENV
  ncclGetEnv/getenv/getEnvFunc("NCCL_X")  direct reads
  any other literal that is exactly "NCCL_X" in src/ (helpers that read the
  variable they are given: ncclGetLevel("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"),
  getNthreads("NCCL_NTHREADS", ...))
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_GIT_DIR = "/work/.mirror/NVIDIA+nccl/repo"
SOURCE_EXT = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh")

PARAM_RE = re.compile(r'\bNCCL_PARAM\s*\(\s*\w+\s*,\s*"([A-Z0-9_]+)"')
DIRECT_RE = re.compile(r'\b(ncclGetEnv|getenv|std::getenv|secure_getenv|getEnvFunc)\s*\(\s*"(NCCL_[A-Z0-9_]+)"')
LITERAL_RE = re.compile(r'"(NCCL_[A-Z0-9_]+)"')
# Macros that declare a parameter by pasting "NCCL_" onto a string: the list refuses
# to be made if another appears, so a new declaring macro is not missed silently.
DECLARING_RE = re.compile(r'#define\s+(\w+)\s*\([^)]*\)[^\n]*(?:\\\n[^\n]*)*?"NCCL_"\s*\w', re.M)
KNOWN_DECLARING = {"NCCL_PARAM"}


def rulebook_tag():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook  # noqa: E402  pure Python, no Ansible imports
    return rulebook.setting("nccl_git_tag")


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir] + list(args), check=True,
                          capture_output=True, text=True).stdout


def extract(files):
    """{path: text} -> ({NCCL_X: sorted list of 'kind path:line'}, [declaring macros])."""
    found = {}
    macros = set()
    for path, text in sorted(files.items()):
        for match in DECLARING_RE.finditer(text):
            macros.add(match.group(1))
        for lineno, line in enumerate(text.splitlines(), 1):
            where = "%s:%d" % (path, lineno)
            if line.lstrip().startswith("#define"):
                continue
            for match in PARAM_RE.finditer(line):
                found.setdefault("NCCL_" + match.group(1), set()).add("param " + where)
            direct = set()
            for match in DIRECT_RE.finditer(line):
                direct.add(match.group(2))
                found.setdefault(match.group(2), set()).add("getenv " + where)
            for match in LITERAL_RE.finditer(line):
                if match.group(1) not in direct:
                    found.setdefault(match.group(1), set()).add("helper " + where)
    return {k: sorted(v) for k, v in found.items()}, sorted(macros)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--git-dir", default=os.environ.get("SPARKFLEET_NCCL_GIT_DIR", DEFAULT_GIT_DIR))
    parser.add_argument("--tag", default=None, help="default: the rule book's nccl_git_tag")
    parser.add_argument("--out", default=None, help="default: tests/contract/nccl_params-<tag>.txt")
    args = parser.parse_args(argv)
    tag = args.tag or rulebook_tag()
    out = args.out or os.path.join(TOP, "tests", "contract", "nccl_params-%s.txt" % tag)
    commit = git(args.git_dir, "rev-parse", "%s^{commit}" % tag).strip()
    tree = git(args.git_dir, "rev-parse", "%s^{tree}" % tag).strip()
    names = [n for n in git(args.git_dir, "ls-tree", "-r", "--name-only", commit, "src").splitlines()
             if n.endswith(SOURCE_EXT)]
    files = {n: git(args.git_dir, "show", "%s:%s" % (commit, n)) for n in names}
    found, macros = extract(files)
    unknown = sorted(set(macros) - KNOWN_DECLARING)
    if unknown:
        sys.exit("nccl_params: %s declare(s) parameters with a pasted \"NCCL_\" prefix; teach %s to read %s"
                 % (", ".join(unknown), os.path.relpath(__file__, TOP), ", ".join(unknown)))
    lines = [
        "# Environment variables NCCL reads, from its source (src/ of the tag)",
        "# tag: %s" % tag,
        "# commit: %s" % commit,
        "# tree: %s" % tree,
        "# files: %d" % len(files),
        "# made by: tools/nccl_params.py --tag %s (git dir %s)" % (tag, args.git_dir),
        "# format: NAME<TAB>how path:line (param: NCCL_PARAM macro, getenv: direct read, helper: a literal "
        "handed to a reading helper); first place only",
    ]
    for name in sorted(found):
        lines.append("%s\t%s" % (name, found[name][0]))
    with open(out, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("nccl_params: %d variables of %s (%s) -> %s" % (len(found), tag, commit[:12], os.path.relpath(out, TOP)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
