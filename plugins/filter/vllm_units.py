# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the vllm_service role's unit records and API keys; the logic is plugins/module_utils/vllm_units.py.
Each filter is documented in its own .yml file beside this one (ansible-doc reads those where the file that
registers several filters carries no DOCUMENTATION of its own)."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_units as vu


def vllm_units(services, model_store_dir, secrets_dir, inventory_key=False, hf_token=False, api_guard=True):
    return vu.units(services, model_store_dir, secrets_dir, inventory_key, hf_token, api_guard)


def vllm_page_cache_heads(models):
    return vu.page_cache_heads(models)


def vllm_key_sources(units):
    return vu.key_sources(units)


def vllm_api_keys(units, inventory_key, files):
    return vu.api_keys(units, inventory_key, files)


def vllm_secret_files(units, secrets_dir, keys, hf_token=""):
    return vu.secret_files(units, secrets_dir, keys, hf_token)


def vllm_controller_key_files(units, keys_dir, host, keys):
    return vu.controller_key_files(units, keys_dir, host, keys)


class FilterModule(object):

    def filters(self):
        return {
            "vllm_units": vllm_units,
            "vllm_key_sources": vllm_key_sources,
            "vllm_page_cache_heads": vllm_page_cache_heads,
            "vllm_api_keys": vllm_api_keys,
            "vllm_secret_files": vllm_secret_files,
            "vllm_controller_key_files": vllm_controller_key_files,
        }
