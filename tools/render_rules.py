#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Render the rule book table into docs/rules.md.

Rewrites the block between ``<!-- rules:begin -->`` and ``<!-- rules:end -->``
with the table from plugins/module_utils/rulebook.py: in docs/rules.md, the one
rendered copy of the table (README.md links to it), or in the files given.

    tools/render_rules.py           # rewrite docs/rules.md (make docs)
    tools/render_rules.py --check   # exit 1 when docs/rules.md drifts
"""

import argparse
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "collections"))
RULES_DOC = os.path.join(REPO, "docs", "rules.md")

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 when a file differs")
    parser.add_argument("files", nargs="*", default=[RULES_DOC],
                        help="Markdown files holding the rules markers (default: docs/rules.md)")
    args = parser.parse_args(argv)

    table = rulebook.render_markdown()
    drift = []
    for path in args.files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:
            new = rulebook.replace_block(text, table)
        except ValueError as exc:
            sys.stderr.write("%s: %s\n" % (path, exc))
            return 2
        if new == text:
            continue
        drift.append(path)
        if not args.check:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(new)
    if args.check and drift:
        sys.stderr.write("rule table out of date in: %s (run tools/render_rules.py %s)\n"
                         % (", ".join(drift), " ".join(drift)))
        return 1
    for path in drift:
        sys.stdout.write("updated %s\n" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
