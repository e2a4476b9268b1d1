# -*- coding: utf-8 -*-
"""The fleet table's 'cache drop' column: when each host last dropped its page cache before a model loaded (the
record of vllm_service's page-cache helper, read by playbooks/summary.yml), and how it was asked for."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.callback import fleet_table


def _cells(rows):
    header, _rule, *lines = fleet_table.table_lines(rows)
    start = header.index("cache drop")
    end = header.index("model")
    return dict((line.split()[0], line[start:end].strip()) for line in lines)


def test_each_host_shows_when_it_last_dropped_and_how():
    rows = {"spark-1": {"page_cache_age_s": 42.7, "page_cache_how": "local", "models": [{"name": "tiny-tp"}]},
            "spark-2": {"page_cache_age_s": 3.2, "page_cache_how": "asked", "models": [{"name": "tiny-tp"}]},
            "spark-3": {"page_cache_age_s": "", "models": [{"name": "alone"}]}}
    assert _cells(rows) == {"spark-1": "42s ago (local)", "spark-2": "3s ago (asked)", "spark-3": "-"}


@pytest.mark.parametrize("seconds,shown", [(0, "0s ago"), (119.9, "119s ago"), (120, "2m ago"), (7199, "119m ago"),
                                           (7200, "2h ago"), (172799, "47h ago"), (172800, "2d ago"), (-5, "0s ago"),
                                           (None, "-"), ("never", "-")])
def test_the_age_is_compact(seconds, shown):
    assert fleet_table._ago(seconds) == shown


def test_only_the_first_line_of_a_host_carries_it():
    rows = {"spark-2": {"page_cache_age_s": 61, "page_cache_how": "asked",
                        "models": [{"name": "tiny-tp"}, {"name": "embed"}]}}
    lines = fleet_table.table_lines(rows)
    assert "61s ago (asked)" in lines[2] and "ago" not in lines[3]
