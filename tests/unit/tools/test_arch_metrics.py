# -*- coding: utf-8 -*-
"""tools/arch_metrics.py counts the lines of Jinja expressions that span several lines (programs in variables), not
values that merely sit on several lines."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))

import arch_metrics  # noqa: E402  pylint: disable=wrong-import-position


def test_a_folded_one_line_expression_is_not_a_program():
    assert arch_metrics.multi_line_jinja("a: >-\n  {{ x | f(y) }}\nb: \"{{ y }}\"\n") == 0


def test_a_mapping_of_one_line_expressions_is_not_a_program():
    assert arch_metrics.multi_line_jinja("d:\n  e: \"{{ z }}\"\n  f: [\"{{ z }}\", 1]\n") == 0


def test_each_line_of_a_multi_line_expression_counts():
    text = ("a: >-\n  {% set out = [] -%}\n  {% for x in y %}{% endfor %}\n  {{ out }}\n"
            "b: \"{{ a\n  | b }}\"\n"
            "c: >-\n  plain words\n  on two lines\n")
    assert arch_metrics.multi_line_jinja(text) == 5
