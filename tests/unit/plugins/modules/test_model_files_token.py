# -*- coding: utf-8 -*-
"""model_files reads the hub token from the role's root-only file; in check mode on a fresh host that file is not
written yet (the role's write is only predicted), which once failed site.yml --check with ENOENT as soon as an
inventory set model_store_hf_token (molecule/site plants one)."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.modules import model_files


def test_the_token_is_read_from_its_file(tmp_path):
    token = tmp_path / "hf_token"
    token.write_text("hf_abcdefgh12345678\n")
    assert model_files._token(str(token)) == "hf_abcdefgh12345678"
    assert model_files._token(str(token), check_mode=True) == "hf_abcdefgh12345678"
    assert model_files._token("") is None


def test_a_token_file_not_written_yet_is_no_token_in_check_mode_only(tmp_path):
    missing = str(tmp_path / "not-yet" / "hf_token")
    assert model_files._token(missing, check_mode=True) is None
    # A real run writes the file before this module runs: its absence then is an error, not a silent anonymous read.
    with pytest.raises(IOError):
        model_files._token(missing)
