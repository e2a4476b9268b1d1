# -*- coding: utf-8 -*-
"""vllm_service serves a model with a source from the copy model_store placed, offline."""

import pytest

SHA = "0123456789abcdef0123456789abcdef01234567"
FILES = ["vllm_service/defaults/main.yml", "vllm_service/vars/main.yml"]


@pytest.mark.parametrize("entry, model, served_name, stored", [
    ({"name": "q", "model": "Qwen/Qwen3-8B", "checkpoint_format": "bf16",
      "source": {"type": "hf", "repo": "Qwen/Qwen3-8B", "revision": SHA}},
     "/srv/store/q", "Qwen/Qwen3-8B", True),
    ({"name": "q", "model": "Qwen/Qwen3-8B", "served_name": "qwen", "checkpoint_format": "bf16",
      "source": {"type": "dir", "path": "/mnt/nfs/q"}},
     "/srv/store/q", "qwen", True),
    ({"name": "p", "model": "/srv/x", "checkpoint_format": "bf16"}, "/srv/x", None, False),
])
def test_a_model_with_a_source_is_served_from_the_store(render_role_vars, entry, model, served_name, stored):
    mine = render_role_vars("localhost,", FILES, "_vllm_service_mine", hosts="localhost",
                            extra_vars={"sparkfleet_models": [entry], "sparkfleet_model_store_dir": "/srv/store"})["localhost"]
    assert len(mine) == 1 and mine[0]["stored"] is stored
    assert mine[0]["entry"]["model"] == model and mine[0]["entry"].get("served_name") == served_name
    assert "source" not in mine[0]["entry"]  # placement and store keys never reach vllm serve
