# -*- coding: utf-8 -*-
"""model_store: source checks, manifests, verification with a stamp, who fetches, the disk refusal."""

import hashlib
import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import model_store as ms
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
from ansible_collections.sparkfleet.gb10.plugins.filter.model_store_plan import model_store_plan
from ansible.errors import AnsibleFilterError

SHA = "0123456789abcdef0123456789abcdef01234567"
HF = {"type": "hf", "repo": "Qwen/Qwen3-8B", "revision": SHA}


@pytest.mark.parametrize("source", [
    HF,
    dict(HF, allow_patterns=["*.json", "*.safetensors"], ignore_patterns=["original/"]),
    {"type": "dir", "path": "/srv/models/qwen"},
    {"type": "archive", "url": "https://example.org/m.tar.gz", "sha256": "a" * 64},
    {"type": "archive", "url": "http://example.org/m.zip?x=1", "sha256": "A" * 64},
])
def test_good_sources(source):
    assert ms.check_source(source) == []


@pytest.mark.parametrize("source, keys", [
    ({"type": "hf", "repo": "Qwen/Qwen3-8B", "revision": "main"}, ["source.revision"]),
    ({"type": "hf", "repo": "Qwen/Qwen3-8B"}, ["source.revision"]),
    ({"type": "hf", "repo": "Qwen3-8B", "revision": SHA}, ["source.repo"]),
    ({"type": "hf", "repo": "a/b", "revision": SHA, "path": "/x"}, ["source.path"]),
    ({"type": "hf", "repo": "a/b", "revision": SHA, "gated": True}, ["source.gated"]),
    ({"type": "hugging", "repo": "a/b"}, ["source.type"]),
    ({"type": "hf", "repo": "a/b", "revison": SHA}, ["source.revison"]),
    ({"type": "dir"}, ["source.path"]),
    ({"type": "dir", "path": "models/x"}, ["source.path"]),
    ({"type": "archive", "url": "ftp://h/m.tar", "sha256": "a" * 64}, ["source.url"]),
    ({"type": "archive", "url": "https://h/m.bin", "sha256": "xyz"}, ["source.url", "source.sha256"]),
    ({"type": "archive", "url": "https://h/m.tar"}, ["source.sha256"]),
    ({"type": "hf", "repo": "a/b", "revision": SHA, "allow_patterns": "*.json"}, ["source.allow_patterns"]),
    ("hf:a/b", ["source"]),
])
def test_bad_sources_every_problem_named(source, keys):
    problems = ms.check_source(source, require_pinned=True, have_token=False)
    assert sorted(p.key for p in problems) == sorted(keys)
    assert all(p.fix for p in problems)


def test_unpinned_allowed_when_pinning_is_off():
    assert ms.check_source({"type": "hf", "repo": "a/b", "revision": "main"}, require_pinned=False) == []


def test_fingerprint_follows_content_not_gating():
    assert ms.fingerprint(HF) == ms.fingerprint(dict(HF, gated=True))
    assert ms.fingerprint(HF) != ms.fingerprint(dict(HF, revision="f" * 40))
    assert ms.fingerprint(HF) != ms.fingerprint(dict(HF, allow_patterns=["*.json"]))


@pytest.mark.parametrize("path, allow, ignore, kept", [
    ("config.json", None, None, True),
    ("config.json", ["*.safetensors"], None, False),
    ("original/consolidated.pth", None, ["original/"], False),
    ("model-00001.safetensors", ["*.safetensors", "*.json"], ["*.bin"], True),
    ("pytorch_model.bin", None, ["*.bin"], False),
])
def test_patterns_as_huggingface_hub_reads_them(path, allow, ignore, kept):
    assert ms.matches(path, allow, ignore) is kept


def test_manifest_from_tree_lfs_by_sha256_regular_by_blob_sha1():
    tree = [
        {"type": "file", "path": "config.json", "size": 10, "oid": "b" * 40},
        {"type": "file", "path": "model.safetensors", "size": 999, "oid": "c" * 40,
         "lfs": {"oid": "d" * 64, "size": 999, "pointerSize": 130}},
        {"type": "directory", "path": "original", "size": 0, "oid": "e" * 40},
        {"type": "file", "path": "original/x.pth", "size": 5, "oid": "f" * 40},
    ]
    manifest = ms.manifest_from_tree(tree, ignore_patterns=["original/"])
    assert manifest == {"config.json": {"size": 10, "git_sha1": "b" * 40},
                        "model.safetensors": {"size": 999, "sha256": "d" * 64}}


def _write(directory, rel, data):
    path = os.path.join(str(directory), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _manifest(files):
    out = {}
    for rel, data in files.items():
        if rel.endswith(".json"):
            out[rel] = {"size": len(data), "git_sha1": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
        else:
            out[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


FILES = {"config.json": b'{"a": 1}\n', "model.safetensors": b"\x01" * 4096, "sub/tokenizer.model": b"tok" * 10}


def test_git_blob_sha1_is_what_git_computes(tmp_path):
    path = _write(tmp_path, "f", b"hello\n")
    assert ms.hash_file(path, "git_sha1") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object


def test_verify_then_stamp_makes_the_rerun_hash_nothing(tmp_path):
    for rel, data in FILES.items():
        _write(tmp_path, rel, data)
    manifest = _manifest(FILES)
    first = ms.verify(str(tmp_path), manifest, None, "fp")
    assert first["missing"] == [] and first["bad"] == {} and sorted(first["hashed"]) == sorted(FILES)
    second = ms.verify(str(tmp_path), manifest, first["stamp"], "fp")
    assert second["hashed"] == [] and second["stamp"] == first["stamp"]
    assert ms.stamp_trusts(str(tmp_path), manifest, "fp", first["stamp"])
    # Another source (fingerprint) or an explicit re-verify hashes everything again.
    assert sorted(ms.verify(str(tmp_path), manifest, first["stamp"], "other")["hashed"]) == sorted(FILES)
    assert sorted(ms.verify(str(tmp_path), manifest, first["stamp"], "fp", reverify=True)["hashed"]) == sorted(FILES)


@pytest.mark.parametrize("damage, why", [
    (lambda p: open(p, "r+b").write(b"\x02"), "sha256"),           # same size, other bytes
    (lambda p: open(p, "ab").write(b"\x00"), "size"),              # grown
    (lambda p: os.truncate(p, 10), "size"),                         # cut short (killed copy)
    (os.unlink, None),                                              # gone
])
def test_damaged_file_found_and_removed(tmp_path, damage, why):
    for rel, data in FILES.items():
        _write(tmp_path, rel, data)
    manifest = _manifest(FILES)
    stamp = ms.verify(str(tmp_path), manifest, None, "fp")["stamp"]
    target = os.path.join(str(tmp_path), "model.safetensors")
    damage(target)
    if why == "sha256":
        os.utime(target, ns=(1, 1))  # the mtime moved too, as any write moves it
    result = ms.verify(str(tmp_path), manifest, stamp, "fp", remove_bad=True)
    assert result["stamp"] is None
    if why is None:
        assert result["missing"] == ["model.safetensors"]
    else:
        assert list(result["bad"]) == ["model.safetensors"] and why in result["bad"]["model.safetensors"]
        assert result["removed"] == ["model.safetensors"] and not os.path.exists(target)
    assert ms.need_bytes(str(tmp_path), manifest) == 4096


def test_bit_rot_behind_the_stamp_is_caught_by_reverify(tmp_path):
    for rel, data in FILES.items():
        _write(tmp_path, rel, data)
    manifest = _manifest(FILES)
    stamp = ms.verify(str(tmp_path), manifest, None, "fp")["stamp"]
    target = os.path.join(str(tmp_path), "model.safetensors")
    before = os.stat(target)
    with open(target, "r+b") as handle:
        handle.write(b"\x07")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert ms.verify(str(tmp_path), manifest, stamp, "fp")["bad"] == {}
    assert list(ms.verify(str(tmp_path), manifest, stamp, "fp", reverify=True)["bad"]) == ["model.safetensors"]


def test_weight_files_skip_the_store_and_client_metadata(tmp_path):
    for rel, data in FILES.items():
        _write(tmp_path, rel, data)
    _write(tmp_path, ".cache/huggingface/download/x.metadata", b"m")
    _write(tmp_path, ms.STAMP_FILE, b"{}")
    _write(tmp_path, ms.MANIFEST_FILE, b"{}")
    assert ms.weight_files(str(tmp_path)) == ["config.json", "model.safetensors", "sub/tokenizer.model"]
    assert set(ms.manifest_from_dir(str(tmp_path))) == set(FILES)


@pytest.mark.parametrize("need, free, reserve, refused", [
    (10, 100, 0, False),
    (100, 100, 0, False),
    (100, 100, 1, True),
    (118 * 2 ** 30, 50 * 2 ** 30, 0, True),
])
def test_disk_refusal_names_host_path_need_free_fix(need, free, reserve, refused):
    text = ms.disk_problem("spark-2", "/var/lib/sparkfleet", need, free, reserve, ["qwen3-235b"])
    assert (text is not None) is refused
    if refused:
        assert "spark-2" in text and "/var/lib/sparkfleet" in text and "qwen3-235b" in text
        assert ms.human(need) in text and ms.human(free) in text and "Fix:" in text


def test_free_bytes_from_the_nearest_existing_parent(tmp_path):
    path, free = ms.free_bytes(str(tmp_path / "not" / "yet"))
    assert path == str(tmp_path) and free > 0


ENTRY = {"name": "qwen", "model": "Qwen/Qwen3-8B", "source": HF}


def holdings(fleet, groups=None):
    """{host: the fleet plan's placements with a source} of {host: entries}, as the filter hands ms.plan."""
    plan = fleet_plan.build(dict((h, {"sparkfleet_models": entries, "group_names": (groups or {}).get(h, [])})
                                 for h, entries in fleet.items()))
    return dict((h, [m for m in plan["hosts"][h]["models"] if m["model"].get("source")]) for h in fleet)


def plan_of(fleet, groups=None):
    """The fleet plan of {host: {models, address}} (groups: {host: group names})."""
    return fleet_plan.build(dict((h, {"sparkfleet_models": d["models"], "sparkfleet_fabric_address": d["address"],
                                      "group_names": (groups or {}).get(h, [])}) for h, d in fleet.items()))


@pytest.mark.parametrize("fleet, expect", [
    # One model across two nodes: the first node fetches, the other receives from its fabric address.
    ({"s1": [dict(ENTRY, nodes=["s2", "s1"])], "s2": [dict(ENTRY, nodes=["s2", "s1"])]},
     {"s1": ("receive", "s2"), "s2": ("fetch", "s2")}),
    # Three hosts serving the same model each: one fetch, inventory order.
    ({"s1": [ENTRY], "s2": [ENTRY], "s3": [ENTRY]},
     {"s1": ("fetch", "s1"), "s2": ("receive", "s1"), "s3": ("receive", "s1")}),
    # A host alone with its model fetches it itself.
    ({"s1": [ENTRY], "s2": []}, {"s1": ("fetch", "s1")}),
    # Same name, other revision: another model, its own fetch.
    ({"s1": [ENTRY], "s2": [dict(ENTRY, source=dict(HF, revision="f" * 40))]},
     {"s1": ("fetch", "s1"), "s2": ("fetch", "s2")}),
])
def test_one_fetcher_per_model(fleet, expect):
    addresses = {"s1": "10.0.0.1", "s2": "10.0.0.2", "s3": "10.0.0.3"}
    jobs = ms.plan(holdings(fleet), addresses, "/var/lib/sparkfleet/models/")
    got = dict((h, (j[0]["role"], j[0]["fetcher"])) for h, j in jobs.items() if j)
    assert got == expect
    for host_jobs in jobs.values():
        for job in host_jobs:
            assert job["dest"] == "/var/lib/sparkfleet/models/qwen"
            assert job["fetcher_address"] == addresses[job["fetcher"]]


def addresses_of(fleet):
    return dict((h, d["address"]) for h, d in fleet.items())


def test_plan_filter_reports_every_problem_of_every_host():
    fleet = {"s1": {"address": "10.0.0.1", "models": [dict(ENTRY, source=dict(HF, revision="main"))]},
             "s2": {"address": "10.0.0.2", "models": [{"name": "plain", "model": "x"},
                                                      dict(ENTRY, name="g", source=dict(HF, gated=True))]}}
    with pytest.raises(AnsibleFilterError) as err:
        model_store_plan(plan_of(fleet), addresses_of(fleet), "/m")
    text = str(err.value)
    assert "s1: sparkfleet_models[0] (qwen): key 'source.revision' is 'main'" in text
    assert "s2: sparkfleet_models[1] (g): key 'source.gated'" in text  # its place in the host's own list
    got = model_store_plan(plan_of(fleet), addresses_of(fleet), "/m", require_pinned=False, have_token=True)
    assert [(j["name"], j["role"]) for j in got["s2"]] == [("g", "fetch")]


def test_plan_filter_needs_the_fetchers_fabric_address():
    fleet = {"s1": {"address": None, "models": [ENTRY]}, "s2": {"address": "10.0.0.2", "models": [ENTRY]}}
    with pytest.raises(AnsibleFilterError, match="s1, which has no sparkfleet_fabric_address"):
        model_store_plan(plan_of(fleet), addresses_of(fleet), "/m")


# Who holds a model is the fleet plan's: the entry's nodes, ray followers included.
@pytest.mark.parametrize("fleet, groups, expect", [
    # group_vars give every host a two-node entry: only its nodes hold it; s3 gets nothing.
    ({"s1": [dict(ENTRY, nodes=["s2", "s1"])], "s2": [dict(ENTRY, nodes=["s2", "s1"])],
      "s3": [dict(ENTRY, nodes=["s2", "s1"])]}, None,
     {"s1": [("receive", "s2")], "s2": [("fetch", "s2")], "s3": []}),
    # The ray executor: the follower runs no unit of its own, but loads its share in the Ray worker.
    ({"s1": [dict(ENTRY, nodes=["s1", "s2"], executor="ray")], "s2": [dict(ENTRY, nodes=["s1", "s2"], executor="ray")]},
     {"s1": ["ray_head"], "s2": ["ray_workers"]},
     {"s1": [("fetch", "s1")], "s2": [("receive", "s1")]}),
    # A host not among a model's nodes but serving the same model alone holds it too (one fetch for both).
    ({"s1": [dict(ENTRY, nodes=["s2"])], "s2": [dict(ENTRY, nodes=["s2"])], "s3": [ENTRY]}, None,
     {"s1": [], "s2": [("fetch", "s2")], "s3": [("receive", "s2")]}),
])
def test_plan_filter_places_a_model_on_the_hosts_the_fleet_plan_gives_it(fleet, groups, expect):
    fleet = dict((h, {"address": "10.0.0.%s" % h[1:], "models": m}) for h, m in fleet.items())
    jobs = model_store_plan(plan_of(fleet, groups), addresses_of(fleet), "/m")
    assert dict((h, [(j["role"], j["fetcher"]) for j in js]) for h, js in jobs.items()) == expect


def test_plan_filter_fetches_with_the_first_holder_in_the_order_of_the_addresses():
    """A model without nodes is fetched by its first holder in inventory order (the play's), not the plan's
    sorted order."""
    fleet = {"s2": {"address": "10.0.0.2", "models": [ENTRY]}, "s1": {"address": "10.0.0.1", "models": [ENTRY]}}
    jobs = model_store_plan(plan_of(fleet), addresses_of(fleet), "/m")
    assert jobs["s2"][0]["role"] == "fetch" and jobs["s1"][0]["fetcher"] == "s2"


def test_a_host_s_own_store_list_is_what_it_holds():
    """model_store_models on a host (the plan's store of it) stands for the entries it serves, in the run's one plan."""
    inputs = {"s1": {"sparkfleet_models": [ENTRY], "sparkfleet_fabric_address": "10.0.0.1",
                     "model_store_models": [dict(ENTRY, name="kept")]},
              "s2": {"sparkfleet_models": [ENTRY], "sparkfleet_fabric_address": "10.0.0.2", "model_store_models": []}}
    jobs = model_store_plan(fleet_plan.build(inputs), {"s1": "10.0.0.1", "s2": "10.0.0.2"}, "/m")
    assert [(job["name"], job["role"]) for job in jobs["s1"]] == [("kept", "fetch")]
    assert jobs.get("s2", []) == []


def test_plan_filter_wants_the_fleet_plan():
    with pytest.raises(AnsibleFilterError, match="must be the fleet plan"):
        model_store_plan({"s1": {"models": [ENTRY], "address": "10.0.0.1"}}, {"s1": "10.0.0.1"}, "/m")


# The real size of the weights, from a manifest, for the memory arithmetic.

def test_weights_bytes_counts_the_weight_files_of_a_manifest_only(tmp_path):
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"w" * 3000)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"w" * 1000)
    (tmp_path / "original").mkdir()
    (tmp_path / "original" / "consolidated.pth").write_bytes(b"p" * 500)
    (tmp_path / "config.json").write_text("{}" * 100)
    (tmp_path / "tokenizer.json").write_text("t" * 4000)
    manifest = ms.manifest_from_dir(str(tmp_path))
    assert ms.weights_bytes(manifest) == 4500
    assert ms.weights_bytes({"config.json": {"size": 10, "sha256": "a" * 64}}) is None
    assert ms.weights_bytes({}) is None


def test_model_store_weights_filter_names_each_model_with_weights():
    from ansible_collections.sparkfleet.gb10.plugins.filter.model_store_plan import model_store_weights
    manifests = {"q": {"a.safetensors": {"size": 7, "git_sha1": "b" * 40}, "README.md": {"size": 99, "git_sha1": "c" * 40}},
                 "cfg-only": {"config.json": {"size": 5, "sha256": "d" * 64}}}
    assert model_store_weights(manifests) == {"q": 7}
    with pytest.raises(AnsibleFilterError, match="the manifest of q"):
        model_store_weights({"q": ["a.safetensors"]})


def test_plan_filter_under_limit_keeps_to_the_plays_hosts():
    # --limit s2: the plan is the whole fleet's (s1 is still a node of the model), but only s2 is in the
    # play, so s2 fetches it itself and s1 gets no job.
    fleet = {"s1": {"address": "10.0.0.1", "models": [dict(ENTRY, nodes=["s1", "s2"])]},
             "s2": {"address": "10.0.0.2", "models": [dict(ENTRY, nodes=["s1", "s2"])]}}
    jobs = model_store_plan(plan_of(fleet), {"s2": "10.0.0.2"}, "/m")
    assert list(jobs) == ["s2"]
    assert [(j["role"], j["fetcher"]) for j in jobs["s2"]] == [("fetch", "s2")]


@pytest.mark.parametrize("source, planted", [
    ({"type": "hf", "repo": "o/m", "revision": "a" * 40, "token": "hf_PLANTED_token_1"}, "hf_PLANTED_token_1"),
    ({"type": "hf", "repo": "o/m", "revision": "a" * 40, "hf_tokn": "hf_PLANTED_token_2"}, "hf_PLANTED_token_2"),
    ({"type": "archive", "url": "https://me:PLANTED-pass@example.com/m.bin", "sha256": "0" * 64}, "PLANTED-pass"),
    ({"type": "archive", "url": "ftp://example.com/m.tgz?token=PLANTED-q", "sha256": "0" * 64}, "PLANTED-q"),
    ({"type": "hf", "repo": "o/m", "revision": "a" * 40, "url": "https://u:PLANTED-x@h/m.tgz"}, "PLANTED-x"),
])
def test_a_secret_in_a_source_is_refused_and_never_shown(source, planted):
    problems = ms.check_source(source, require_pinned=True, have_token=True)
    assert problems, source
    text = "\n".join(p.text("spark-1, model m") for p in problems)
    assert planted not in text, text
    assert "(hidden)" in text


def test_shown_url_keeps_what_is_not_secret():
    from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import shown_url
    assert shown_url("https://h.example/m.tgz?x=1&sig=abc") == "https://h.example/m.tgz?x=1&sig=(hidden)"
    assert shown_url("https://h.example/m.tgz") == "https://h.example/m.tgz"


def test_state_files_hash_the_small_files_and_stat_the_weights():
    jobs = [{"name": "big", "dest": "/m/big"}, {"name": "new", "dest": "/m/new"}]
    manifests = {"big": {"config.json": {"size": 700}, "model-1.safetensors": {"size": ms.STATE_HASH_BYTES + 1},
                         "sub/tokenizer.json": {"size": ms.STATE_HASH_BYTES}}}
    out = ms.state_files(jobs, manifests, "/m", ["/etc/rsyncd.conf", "/m"])
    assert out["paths"] == ["/m", "/m/.partial", "/etc/rsyncd.conf", "/m/big", "/m/big/" + ms.MANIFEST_FILE,
                            "/m/big/" + ms.STAMP_FILE, "/m/big/config.json", "/m/big/sub/tokenizer.json",
                            "/m/new", "/m/new/" + ms.MANIFEST_FILE, "/m/new/" + ms.STAMP_FILE]
    assert out["stat_paths"] == ["/m/big/model-1.safetensors"]
    assert ms.state_files([], {}, "/m") == {"paths": ["/m", "/m/.partial"], "stat_paths": []}
