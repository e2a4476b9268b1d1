#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_files
short_description: Fetch a model's files once and prove them whole against a manifest
description:
  - C(state=planned) reads what the checkpoint is (the hub's tree listing at the pinned commit, or
    the source directory) and returns its manifest, the bytes still to place and the free bytes;
    it changes nothing. With a valid stamp it answers from the stamp and reads nothing remote.
  - C(state=present) fetches what is missing or does not match. An C(hf) source with the real
    C(huggingface_hub) client (its hub URLs, metadata call and HTTP download with retries), each file
    into a partial file that a later run resumes, a C(dir) source by copying, an C(archive) source by a resumable download checked
    against its sha256 and unpacked. Then every file is verified, and the manifest and stamp written.
  - C(state=verified) checks the files against a given manifest (what the fetching host
    found), removes a file that does not match (so the fabric copy replaces it) and writes the
    stamp when everything is whole. It never reaches outside the host.
  - Every file is checked by sha256 (LFS files, dir and archive sources) or by its git blob
    sha1 (regular files of a hub repository). A file whose size and mtime the stamp recorded
    is trusted without hashing unless O(reverify).
  - C(hf) sources need C(huggingface_hub) importable by the interpreter that runs the module
    (the role runs it with its own virtualenv's Python).
version_added: "0.1.0"
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  dest:
    description: Directory that holds the model's files.
    type: path
    required: true
  state:
    description: planned, present or verified (see the description).
    type: str
    choices: [planned, present, verified]
    default: present
  source:
    description:
      - The model entry's source (plugins/module_utils/model_store.py SOURCE_SPEC).
      - Required for planned and present.
    type: dict
  manifest:
    description:
      - "C({path: {size, sha256 | git_sha1}}) to check against; for verified, default the manifest
        file the fetching host wrote into O(dest)."
    type: dict
  endpoint:
    description: Hub endpoint (HF_ENDPOINT); default the client's own (https://huggingface.co).
    type: str
  token_file:
    description:
      - File holding the hub token (read here, never passed as an argument or returned).
      - In check mode a file not written yet (a fresh host) is read as no token.
    type: path
  reverify:
    description: Hash every file even when the stamp vouches for it.
    type: bool
    default: false
  remove_bad:
    description: Delete a file that does not match, so the next transfer replaces it (not in check mode).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reports what would be fetched, removed and stamped; changes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  idempotent:
    support: full
    description: With every file whole and stamped, a second run reads no file and reaches no hub.
"""

EXAMPLES = r"""
- name: Fetch a pinned repository from the hub and prove it whole
  sparkfleet.gb10.model_files:
    dest: /var/lib/sparkfleet/models/qwen3-8b
    source:
      type: hf
      repo: Qwen/Qwen3-8B
      revision: 0123456789abcdef0123456789abcdef01234567
      allow_patterns: ["*.json", "*.safetensors", "tokenizer*"]
    token_file: /etc/sparkfleet/model_store/hf_token
  vars:
    ansible_python_interpreter: /opt/sparkfleet/model-store-venv/bin/python

- name: Check a copy received over the fabric
  sparkfleet.gb10.model_files:
    dest: /var/lib/sparkfleet/models/qwen3-8b
    state: verified
"""

RETURN = r"""
manifest:
  description: "What the whole checkpoint is, C({path: {size, sha256 | git_sha1}})."
  returned: always
  type: dict
total_bytes:
  description: Size of the whole checkpoint.
  returned: always
  type: int
need_bytes:
  description: Bytes not yet on the host (planned).
  returned: always
  type: int
free_bytes:
  description: Free bytes of the filesystem that holds O(dest) (its nearest existing parent).
  returned: always
  type: int
free_path:
  description: The existing path whose filesystem C(free_bytes) describes.
  returned: always
  type: str
fetched:
  description: Files fetched from outside this run.
  returned: always
  type: list
  elements: str
fetched_bytes:
  description: Bytes of the files fetched.
  returned: always
  type: int
missing:
  description: Files of the manifest not on the host (verified; before any transfer).
  returned: always
  type: list
  elements: str
bad:
  description: Files that did not match, with why (size or hash).
  returned: always
  type: dict
hashed:
  description: Files hashed this run (not vouched for by the stamp).
  returned: always
  type: list
  elements: str
whole:
  description: Every file of the manifest is on the host and matches.
  returned: always
  type: bool
from_stamp:
  description: The stamp vouched for every file; nothing was hashed or fetched.
  returned: always
  type: bool
"""

import os
import shutil
import tarfile
import tempfile
import traceback
import zipfile

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    from urlparse import urlsplit

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.sparkfleet.gb10.plugins.module_utils import model_store as ms

try:
    import huggingface_hub  # noqa: F401 - only hf sources need it  # pylint: disable=unused-import
    HF_IMPORT_ERROR = None
except ImportError:
    HF_IMPORT_ERROR = traceback.format_exc()


def _token(path, check_mode=False):
    """The hub token in ``path``; None without one. In check mode on a fresh host the role has not written the file
    yet (its task only predicts the write): the listing is read without it, as a public repository's would be."""
    if not path:
        return None
    if check_mode and not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read().strip() or None


def hub_manifest(source, endpoint, token):
    """The manifest of an hf source from the hub's tree listing at its revision."""
    from huggingface_hub import HfApi
    api = HfApi(endpoint=endpoint, token=token)
    entries = api.list_repo_tree(source["repo"], revision=source["revision"], recursive=True)
    return ms.manifest_from_tree(entries, source.get("allow_patterns"), source.get("ignore_patterns"))


def hub_fetch(source, dest, files, endpoint, token):
    """Fetch ``files`` of an hf source into ``dest`` with the client's own HTTP download (redirects,
    auth headers, retries), resuming each from a partial file the store keeps.

    Not hf_hub_download: since huggingface_hub's PR #4228 (in the 2.x the fleet installs) it writes a
    fresh per-process temporary file, so a download killed with its process starts again from byte 0.
    A 60 GB shard must not. The partial file lives under ``dest/.cache/sparkfleet-partial`` and is
    moved into place only once complete; the caller then proves it against the manifest."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers
    for rel in files:
        url = hf_hub_url(source["repo"], rel, revision=source["revision"], endpoint=endpoint)
        meta = get_hf_file_metadata(url, token=token, endpoint=endpoint)
        if meta.commit_hash and meta.commit_hash != source["revision"] and ms.COMMIT.match(source["revision"]):
            raise ValueError("the hub answered %s for %s at commit %s, expected %s" % (
                rel, source["repo"], meta.commit_hash, source["revision"]))
        part = os.path.join(dest, ".cache", "sparkfleet-partial", rel + ".part")
        os.makedirs(os.path.dirname(part), exist_ok=True)
        have = os.path.getsize(part) if os.path.isfile(part) else 0
        if meta.size is not None and have > meta.size:
            os.unlink(part)
            have = 0
        same_host = urlsplit(meta.location).netloc == urlsplit(url).netloc
        headers = build_hf_headers(token=token if same_host else False)
        with open(part, "ab") as handle:
            http_get(meta.location, handle, resume_size=have, headers=headers, expected_size=meta.size,
                     displayed_filename=rel)
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(part, target)


def dir_copy(source_dir, dest, files):
    for rel in files:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = target + ".sparkfleet-part"
        shutil.copyfile(os.path.join(source_dir, rel), tmp)
        os.replace(tmp, target)


def archive_fetch(module, source, dest):
    """Download the archive (resuming a partial one), check its sha256, unpack it into ``dest``."""
    part = os.path.join(dest, ".sparkfleet-archive")
    got = ms.hash_file(part, "sha256") if os.path.isfile(part) else None
    if got != source["sha256"].lower():
        have = os.path.getsize(part) if os.path.isfile(part) else 0
        headers = {"Range": "bytes=%d-" % have} if have else {}
        from ansible.module_utils.urls import open_url
        response = open_url(source["url"], headers=headers, timeout=60)
        mode = "ab" if have and response.getcode() == 206 else "wb"
        with open(part, mode) as handle:
            shutil.copyfileobj(response, handle, ms.CHUNK)
        got = ms.hash_file(part, "sha256")
        if got != source["sha256"].lower():
            os.unlink(part)
            module.fail_json(msg="%s: sha256 %s, expected %s (source.sha256); the partial file was removed, run again "
                             "or fix source.sha256" % (source["url"], got, source["sha256"]))
    unpack = tempfile.mkdtemp(dir=dest, prefix=".sparkfleet-archive-unpack")
    try:
        if zipfile.is_zipfile(part):
            with zipfile.ZipFile(part) as archive:
                for name in archive.namelist():
                    if name.startswith("/") or ".." in name.split("/"):
                        module.fail_json(msg="%s: unsafe member %s" % (source["url"], name))
                archive.extractall(unpack)
        else:
            with tarfile.open(part) as archive:
                archive.extractall(unpack, filter="data")
        tops = os.listdir(unpack)
        root = os.path.join(unpack, tops[0]) if len(tops) == 1 and os.path.isdir(os.path.join(unpack, tops[0])) else unpack
        for rel in ms.weight_files(root):
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(os.path.join(root, rel), target)
    finally:
        shutil.rmtree(unpack, ignore_errors=True)
    os.unlink(part)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            state=dict(type="str", default="present", choices=["planned", "present", "verified"]),
            source=dict(type="dict"),
            manifest=dict(type="dict"),
            endpoint=dict(type="str"),
            token_file=dict(type="path", no_log=False),
            reverify=dict(type="bool", default=False),
            remove_bad=dict(type="bool", default=True),
        ),
        required_if=[("state", "planned", ("source", "manifest"), True), ("state", "present", ("source",))],
        supports_check_mode=True,
    )
    p = module.params
    dest, state, source = p["dest"], p["state"], p["source"]
    if source:
        problems = ms.check_source(source, require_pinned=False)
        if problems:
            module.fail_json(msg="\n".join(pr.text("source") for pr in problems))
    # The source's fingerprint ties the stamp to the content; a receiving host checks against the
    # manifest it is given (or the one that travelled with the files) and has no source.
    fp = ms.fingerprint(source) if source else None
    stamp = ms.read_json(os.path.join(dest, ms.STAMP_FILE))
    stored = ms.read_json(os.path.join(dest, ms.MANIFEST_FILE))
    free_path, free = ms.free_bytes(dest)
    result = dict(changed=False, manifest={}, total_bytes=0, need_bytes=0, free_bytes=free, free_path=free_path,
                  fetched=[], fetched_bytes=0, missing=[], bad={}, hashed=[], whole=False, from_stamp=False)

    # The stamp vouches for everything: no hub, no hashing (the no-op rerun).
    if source:
        known = p["manifest"] or (stored.get("files") if stored and stored.get("fingerprint") == fp else None)
    else:
        known = p["manifest"] or (stored.get("files") if stored else None)
    if known and not p["reverify"] and ms.stamp_trusts(dest, known, fp, stamp):
        result.update(manifest=known, total_bytes=sum(f["size"] for f in known.values()), whole=True, from_stamp=True)
        module.exit_json(**result)

    kind = source["type"] if source else None
    token = _token(p["token_file"], module.check_mode)
    if kind == "hf" and state != "verified" and HF_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("huggingface_hub") + " (the model_store role's virtualenv)",
                         exception=HF_IMPORT_ERROR)
    manifest = p["manifest"]
    try:
        if manifest is None and state == "verified":
            manifest = known
            if manifest is None:
                module.fail_json(msg="%s: no manifest given and none in %s from the fetching host" % (dest, ms.MANIFEST_FILE))
        elif manifest is None and kind == "hf":
            manifest = hub_manifest(source, p["endpoint"], token)
            if not manifest:
                module.fail_json(msg="%s@%s: no file matches allow_patterns %s / ignore_patterns %s" % (
                    source["repo"], source["revision"], source.get("allow_patterns"), source.get("ignore_patterns")))
        elif manifest is None and kind == "dir":
            if not os.path.isdir(source["path"]):
                module.fail_json(msg="source.path %s is not a directory on this host" % source["path"])
            manifest = ms.manifest_from_dir(source["path"])
        elif manifest is None and kind == "archive":
            manifest = known  # only known once unpacked
    except Exception as exc:  # the hub's own error says what is wrong (gated, not found, revision)
        module.fail_json(msg="%s: reading the checkpoint's file list failed: %s: %s" % (
            dest, type(exc).__name__, exc))

    if manifest is not None:
        result.update(manifest=manifest, total_bytes=sum(f["size"] for f in manifest.values()),
                      need_bytes=ms.need_bytes(dest, manifest))
    if state == "planned" or (manifest is None and module.check_mode):
        module.exit_json(**result)

    if not module.check_mode:
        os.makedirs(dest, mode=0o755, exist_ok=True)
    check = ms.verify(dest, manifest, stamp, fp, p["reverify"], remove_bad=p["remove_bad"] and not module.check_mode) \
        if manifest is not None else None
    if check is not None:
        result.update(missing=check["missing"], bad=check["bad"], hashed=check["hashed"])
    todo = (check["missing"] + sorted(check["bad"])) if check is not None else None

    if state == "present" and (todo is None or todo):
        result["changed"] = True
        result["fetched"] = todo if todo is not None else ["<archive>"]
        if module.check_mode:
            module.exit_json(**result)
        try:
            if kind == "hf":
                hub_fetch(source, dest, todo, p["endpoint"], token)
            elif kind == "dir":
                dir_copy(source["path"], dest, todo)
            else:
                archive_fetch(module, source, dest)
                if manifest is None:
                    manifest = ms.manifest_from_dir(dest)
                    result.update(manifest=manifest, total_bytes=sum(f["size"] for f in manifest.values()))
        except Exception as exc:
            module.fail_json(msg="%s: fetching %s failed: %s: %s (run again: a partial download resumes)" % (
                dest, ", ".join((todo or [])[:5]), type(exc).__name__, exc), **result)
        result["fetched_bytes"] = sum(manifest[f]["size"] for f in (todo or manifest))
        # Only what was fetched is hashed again: the files found whole above keep their proof.
        before = {"fingerprint": fp, "manifest": ms.manifest_digest(manifest), "files": check["states"] if check else {}}
        check = ms.verify(dest, manifest, before, fp, False, remove_bad=True)
        if kind == "hf" and (check["missing"] or check["bad"]):
            # A download that does not match was removed: once more from byte 0, then give up.
            hub_fetch(source, dest, check["missing"] + sorted(check["bad"]), p["endpoint"], token)
            check = ms.verify(dest, manifest, dict(before, files=check["states"]), fp, False, remove_bad=True)
        if check["missing"] or check["bad"]:
            module.fail_json(msg="%s: after fetching, %d file(s) still missing and %d not matching: %s" % (
                dest, len(check["missing"]), len(check["bad"]), check["missing"] + sorted(check["bad"].items())),
                **result)
    elif check["missing"] or check["bad"]:
        # verified: the caller transfers what is missing or was removed, then verifies again.
        result["changed"] = bool(check["removed"]) or (module.check_mode and bool(check["bad"]))
        module.exit_json(**result)

    result["whole"] = True
    new_manifest = {"fingerprint": fp, "files": manifest}
    if state == "present" and stored != new_manifest:  # the fetching host's; it travels with the files
        result["changed"] = True
        if not module.check_mode:
            ms.write_json(os.path.join(dest, ms.MANIFEST_FILE), new_manifest)
    if check["stamp"] != stamp:
        result["changed"] = True
        if not module.check_mode:
            ms.write_json(os.path.join(dest, ms.STAMP_FILE), check["stamp"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
