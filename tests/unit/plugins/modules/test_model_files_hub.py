# -*- coding: utf-8 -*-
"""model_files and the hub stand-in against the REAL huggingface_hub client of the wheelhouse.

The stand-in (tests/sim/hub/hub_standin.py) runs on localhost in this process; the client runs
in a virtualenv made from ${SPARKFLEET_CACHE:-/var/cache/sparkfleet}/wheelhouse (the wheels the
simulated hosts install), once, under .cache/. The module runs through ansible-playbook with that
virtualenv's Python as interpreter, as the model_store role runs it on a host.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "sim", "hub"))
import hub_standin  # noqa: E402

# model_store's hub client, as tools/wheelhouse.sh downloads it (resolved apart from the vLLM set).
WHEELHOUSE = os.path.join(os.environ.get("SPARKFLEET_CACHE", "/var/cache/sparkfleet"), "wheelhouse", "hub")
COMMIT = "5f0a1b2c3d4e5f60718293a4b5c6d7e8f9012345"
TOKEN = "hf_standin_token"
BIG = 24 * 1024 * 1024


@pytest.fixture(scope="module")
def client_python():
    if not os.path.isdir(WHEELHOUSE) or not [f for f in os.listdir(WHEELHOUSE) if f.startswith("huggingface_hub-")]:
        pytest.fail("no huggingface_hub wheel in %s: run make setup (make wheelhouse) first" % WHEELHOUSE)
    with open(os.path.join(REPO, "roles", "model_store", "defaults", "main.yml")) as handle:
        pins = yaml.safe_load(handle)["model_store_hf_packages"]  # the client the role installs on the hosts
    venv = os.path.join(REPO, ".cache", "hf-client-venv")
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".installed")
    if not os.path.exists(stamp) or open(stamp).read() != " ".join(pins):
        subprocess.check_call([sys.executable, "-m", "venv", "--clear", venv])
        subprocess.check_call([python, "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE] + pins)
        with open(stamp, "w") as handle:
            handle.write(" ".join(pins))
    return python


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    model = root / "tiny"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "llama"}\n')
    (model / "sub" / "tokenizer.json").write_text('{"v": 1}\n')
    with open(str(model / "model.safetensors"), "wb") as handle:
        handle.write(os.urandom(BIG))
    (model / "README.md").write_text("not wanted\n")
    server = hub_standin.serve({
        "sparkfleet-test/tiny": {"dir": str(model), "commit": COMMIT, "token": None},
        "sparkfleet-test/gated": {"dir": str(model), "commit": COMMIT, "token": TOKEN},
    })
    server.model_dir = str(model)
    server.endpoint = "http://127.0.0.1:%d" % server.server_address[1]
    yield server
    server.shutdown()


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _client(python, code, hub, **env):
    environ = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_DISABLE_TELEMETRY="1", HF_HOME="/nonexistent-hf-home",
                   **env)
    return subprocess.run([python, "-c", code], capture_output=True, text=True, env=environ, timeout=120, check=False)


def test_real_snapshot_download_against_the_stand_in(client_python, hub, tmp_path):
    hub.hub.stats.clear()
    code = ("import huggingface_hub, sys; print(huggingface_hub.__version__); "
            "print(huggingface_hub.snapshot_download('sparkfleet-test/tiny', revision=%r, local_dir=%r, "
            "ignore_patterns=['*.md']))" % (COMMIT, str(tmp_path / "out")))
    proc = _client(client_python, code, hub)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    for rel in ("config.json", "sub/tokenizer.json", "model.safetensors"):
        assert _sha256(str(out / rel)) == _sha256(os.path.join(hub.model_dir, rel))
    assert not (out / "README.md").exists()
    stats = hub.hub.stats["127.0.0.1"]
    assert stats["files"]["sparkfleet-test/tiny/model.safetensors"] == BIG
    # Revision info as HfApi.model_info / repo_info read it, and the branch name resolving to the commit.
    code = ("import huggingface_hub as h; i = h.HfApi().model_info('sparkfleet-test/tiny', revision='main'); "
            "print(i.sha, sorted(s.rfilename for s in i.siblings))")
    proc = _client(client_python, code, hub)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == COMMIT and "model.safetensors" in proc.stdout


def test_gated_repo_needs_the_token(client_python, hub, tmp_path):
    code = ("import huggingface_hub as h; h.snapshot_download('sparkfleet-test/gated', revision=%r, local_dir=%r)"
            % (COMMIT, str(tmp_path / "g")))
    proc = _client(client_python, code, hub)
    assert proc.returncode != 0 and "GatedRepoError" in proc.stderr
    proc = _client(client_python, code, hub, HF_TOKEN=TOKEN)
    assert proc.returncode == 0, proc.stderr[-3000:]


PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Run model_files
      sparkfleet.gb10.model_files: "{{ module_args }}"  # noqa: args[module]
      register: out
      ignore_errors: true
      vars:
        ansible_python_interpreter: "{{ client_python }}"
    - name: Keep the result
      check_mode: false
      ansible.builtin.copy:
        content: "{{ out | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""


def _module(client_python, hub, tmp_path, args, check=False):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    result = tmp_path / "result.json"
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps({"module_args": args, "client_python": client_python, "result_file": str(result)}))
    before = json.loads(json.dumps(hub.hub.stats.get("127.0.0.1", {"requests": 0, "bytes": 0})))
    command = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(play), "-e",
               "@" + str(variables)] + (["--check"] if check else [])
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = hub.hub.stats.get("127.0.0.1", {"requests": 0, "bytes": 0})
    data = json.loads(result.read_text())
    data["hub_requests"] = after["requests"] - before["requests"]
    data["hub_bytes"] = after["bytes"] - before["bytes"]
    return data


def _source(repo="sparkfleet-test/tiny"):
    return {"type": "hf", "repo": repo, "revision": COMMIT, "ignore_patterns": ["*.md"]}


def test_module_fetches_verifies_stamps_and_reruns_as_a_no_op(client_python, hub, tmp_path):
    dest = str(tmp_path / "store" / "tiny")
    args = {"dest": dest, "source": _source(), "endpoint": hub.endpoint}
    planned = _module(client_python, hub, tmp_path, dict(args, state="planned"))
    assert not planned.get("failed"), planned.get("msg")
    assert planned["changed"] is False and planned["need_bytes"] == planned["total_bytes"] > BIG
    assert planned["manifest"]["model.safetensors"]["sha256"] == _sha256(os.path.join(hub.model_dir, "model.safetensors"))
    assert "git_sha1" in planned["manifest"]["config.json"] and "README.md" not in planned["manifest"]
    assert not os.path.exists(dest) and planned["hub_bytes"] < 10000  # only the listing

    checked = _module(client_python, hub, tmp_path, args, check=True)
    assert checked["changed"] is True and not os.path.exists(dest) and checked["hub_bytes"] < 10000

    first = _module(client_python, hub, tmp_path, args)
    assert not first.get("failed"), first.get("msg")
    assert first["changed"] is True and first["whole"] is True
    assert sorted(first["fetched"]) == ["config.json", "model.safetensors", "sub/tokenizer.json"]
    assert first["hub_bytes"] >= BIG

    again = _module(client_python, hub, tmp_path, args)
    assert again["changed"] is False and again["from_stamp"] is True and again["hashed"] == []
    assert again["hub_requests"] == 0  # the stamp answers: the hub is not asked at all

    # A corrupted file (same size) is found, fetched again, and only it.
    with open(os.path.join(dest, "model.safetensors"), "r+b") as handle:
        handle.seek(BIG // 2)
        handle.write(b"\xff" * 16)
    repaired = _module(client_python, hub, tmp_path, args)
    assert repaired["changed"] is True and list(repaired["bad"]) == ["model.safetensors"]
    assert repaired["fetched"] == ["model.safetensors"] and repaired["whole"] is True
    assert BIG <= repaired["hub_bytes"] < BIG + 100000
    assert _sha256(os.path.join(dest, "model.safetensors")) == _sha256(os.path.join(hub.model_dir, "model.safetensors"))

    # verified (what a host that received the files over the fabric runs): the manifest the
    # fetcher wrote travels with the files; the hub is never asked.
    (tmp_path / "copy").mkdir()
    copy = str(tmp_path / "copy" / "tiny")
    subprocess.check_call(["cp", "-a", dest, copy])
    os.unlink(os.path.join(copy, ".sparkfleet-verified.json"))
    os.truncate(os.path.join(copy, "model.safetensors"), 1000)
    seen = _module(client_python, hub, tmp_path, {"dest": copy, "state": "verified"})
    assert seen["whole"] is False and list(seen["bad"]) == ["model.safetensors"]
    assert not os.path.exists(os.path.join(copy, "model.safetensors")) and seen["hub_requests"] == 0
    subprocess.check_call(["cp", os.path.join(dest, "model.safetensors"), copy])
    fine = _module(client_python, hub, tmp_path, {"dest": copy, "state": "verified"})
    assert fine["whole"] is True and fine["changed"] is True
    assert _module(client_python, hub, tmp_path, {"dest": copy, "state": "verified"})["changed"] is False
    reverified = _module(client_python, hub, tmp_path, {"dest": copy, "state": "verified", "reverify": True})
    assert reverified["changed"] is False and len(reverified["hashed"]) == 3


def _descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_a_killed_fetch_resumes(client_python, hub, tmp_path):
    """The module (through ansible-playbook) killed midway, with its whole process group, then run
    again: it asks the hub only for the rest of the file (a Range request) and the file is whole."""
    dest = str(tmp_path / "resume")
    part = os.path.join(dest, ".cache", "sparkfleet-partial", "model.safetensors.part")
    args = {"dest": dest, "source": _source(), "endpoint": hub.endpoint}
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps({"module_args": args, "client_python": client_python,
                                     "result_file": str(tmp_path / "killed.json")}))
    hub.hub.throttle_bps = 4 * 1024 * 1024
    proc = subprocess.Popen([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(play),
                             "-e", "@" + str(variables)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    partial = 0
    try:
        deadline = time.time() + 90
        while time.time() < deadline and partial < BIG // 4:
            time.sleep(0.2)
            partial = os.path.getsize(part) if os.path.exists(part) else 0
    finally:
        # The module runs in a session of its own under ansible-playbook: kill every descendant by pid.
        for pid in [proc.pid] + _descendants(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        hub.hub.throttle_bps = 0
    time.sleep(0.5)
    assert os.path.exists(part), (partial, sorted(os.listdir(dest)) if os.path.isdir(dest) else None, time.time() - deadline)
    partial = os.path.getsize(part)
    assert BIG // 4 <= partial < BIG, "the fetch was not caught midway (%d bytes)" % partial
    assert not os.path.exists(os.path.join(dest, "model.safetensors"))  # never in place half-written
    ranged_before = hub.hub.stats["127.0.0.1"]["ranged"]
    result = _module(client_python, hub, tmp_path, args)
    assert result["whole"] is True, result
    assert hub.hub.stats["127.0.0.1"]["ranged"] == ranged_before + 1  # asked for the rest only
    assert result["hub_bytes"] <= BIG - partial + 100000
    assert _sha256(os.path.join(dest, "model.safetensors")) == _sha256(os.path.join(hub.model_dir, "model.safetensors"))
