#!/usr/bin/env python3
"""Make the tiny random Llama the test bed serves (no model can be downloaded).

Writes ``${SPARKFLEET_CACHE:-/var/cache/sparkfleet}/models/tiny-llama`` (or
``--out``): a ``LlamaForCausalLM`` with hidden 256, intermediate 512, 2 layers,
4 attention heads and 2 KV heads (head_dim 64: vLLM's CPU attention rejects 16),
random weights from a fixed seed, and a small byte-level BPE tokenizer trained
with ``tokenizers`` on a built-in corpus. About 3 MB.

Needs torch, transformers and tokenizers. When they are not importable the
script makes ``<cache>/tools-venv`` from the wheelhouse built by
``tools/wheelhouse.sh`` (offline, ``--no-index``) and re-runs itself there.
A stamp of the parameters makes a second run return at once.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

CACHE = os.environ.get("SPARKFLEET_CACHE", "/var/cache/sparkfleet")
PARAMS = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
    "vocab_size": 1024,
    "seed": 1234,
    "dtype": "bfloat16",
}
TOOL_PACKAGES = ["torch", "transformers", "tokenizers", "safetensors"]
CORPUS = """\
The DGX Spark is a small machine with one GB10 superchip and unified memory.
Two machines are joined by a QSFP cable and form a cluster for large models.
Ray schedules the workers, and vLLM serves the model through an OpenAI API.
The quick brown fox jumps over the lazy dog. A journey of a thousand miles
begins with a single step. Hello world, this is a tiny test model that says
nothing useful but answers every request with some tokens, quickly.
Once upon a time there was a cluster of two nodes that talked over a fabric.
One two three four five six seven eight nine ten eleven twelve thirteen.
"""


def _saved_with(cache):
    """The wheelhouse's transformers and tokenizers pins: the files must be what the served
    release's transformers reads (a tokenizer saved by transformers 5 does not load in 4.57)."""
    try:
        with open(os.path.join(cache, "wheelhouse", "constraints.txt")) as fh:
            return sorted(line.strip() for line in fh if line.startswith(("transformers==", "tokenizers==")))
    except OSError:
        return []


def _stamp(cache=CACHE):
    return hashlib.sha256(json.dumps([PARAMS, _saved_with(cache)], sort_keys=True).encode()).hexdigest()


def _bootstrap(args):
    venv = os.path.join(args.cache, "tools-venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        sys.exit("make_tiny_model: %s lacks %s" % (venv, TOOL_PACKAGES))
    wheelhouse = os.path.join(args.cache, "wheelhouse")
    if not os.path.isdir(wheelhouse):
        sys.exit("make_tiny_model: no %s; run tools/wheelhouse.sh first" % wheelhouse)
    if not os.path.exists(py):
        print("make_tiny_model: creating %s from %s" % (venv, wheelhouse))
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call(
        [py, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse,
         "-c", os.path.join(wheelhouse, "constraints.txt")] + TOOL_PACKAGES)
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def make(out, cache=CACHE):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=PARAMS["vocab_size"], special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines() * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        model_max_length=PARAMS["max_position_embeddings"])
    # A chat template lets /v1/chat/completions work as well as /v1/completions.
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}")

    torch.manual_seed(PARAMS["seed"])
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=PARAMS["hidden_size"],
        intermediate_size=PARAMS["intermediate_size"],
        num_hidden_layers=PARAMS["num_hidden_layers"],
        num_attention_heads=PARAMS["num_attention_heads"],
        num_key_value_heads=PARAMS["num_key_value_heads"],
        max_position_embeddings=PARAMS["max_position_embeddings"],
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(getattr(torch, PARAMS["dtype"]))
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    for name in os.listdir(out):  # readable by the unprivileged service user after copying
        os.chmod(os.path.join(out, name), 0o644)
    with open(os.path.join(out, ".stamp"), "w") as fh:
        fh.write(_stamp(cache))
    print("make_tiny_model: wrote %s (vocab %d)" % (out, len(fast)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=CACHE)
    parser.add_argument("--out", default=None, help="default: <cache>/models/tiny-llama")
    args = parser.parse_args()
    out = args.out or os.path.join(args.cache, "models", "tiny-llama")
    try:
        with open(os.path.join(out, ".stamp")) as fh:
            if fh.read().strip() == _stamp(args.cache):
                print("make_tiny_model: up to date (%s)" % out)
                return
    except OSError:
        pass
    try:
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        _bootstrap(args)
    make(out, args.cache)


if __name__ == "__main__":
    main()
