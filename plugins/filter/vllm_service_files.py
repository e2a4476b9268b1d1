# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the vllm_service role's files and of what their settling means for each unit; the logic is
plugins/module_utils/vllm_service_files.py. Each filter is documented in its own .yml file beside this one."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_service_files as vsf


def vllm_unit_files(units, guard_dir, retry_unit, retry_after_sec):
    return vsf.unit_files(units, guard_dir, retry_unit, retry_after_sec)


def vllm_headwatch_files(followers, program, prefix):
    return vsf.headwatch_files(followers, program, prefix)


def vllm_page_cache_files(helper_wanted, member, helper, state_file, unit):
    return vsf.page_cache_files(helper_wanted, member, helper, state_file, unit)


def vllm_unit_reads(units, followers, headwatch_prefix, page_cache_socket=""):
    return vsf.unit_reads(units, followers, headwatch_prefix, page_cache_socket)


def vllm_state_record(units, followers, headwatch_prefix, page_cache_socket=""):
    return vsf.state_record(units, followers, headwatch_prefix, page_cache_socket)


def vllm_unit_results(units, result, guard_file, secrets, reads, check_mode=False):
    return vsf.unit_results(units, result, guard_file, secrets, reads, check_mode)


def vllm_headwatch_results(followers, result, program, prefix, reads, check_mode=False):
    return vsf.headwatch_results(followers, result, program, prefix, reads, check_mode)


def vllm_keys_to_generate(key_sources, key_files):
    return vsf.keys_to_generate(key_sources, key_files)


class FilterModule(object):

    def filters(self):
        return {
            "vllm_unit_files": vllm_unit_files,
            "vllm_headwatch_files": vllm_headwatch_files,
            "vllm_page_cache_files": vllm_page_cache_files,
            "vllm_unit_reads": vllm_unit_reads,
            "vllm_state_record": vllm_state_record,
            "vllm_unit_results": vllm_unit_results,
            "vllm_headwatch_results": vllm_headwatch_results,
            "vllm_keys_to_generate": vllm_keys_to_generate,
        }
