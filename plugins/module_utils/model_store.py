# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Model weights on the hosts: where they come from, who fetches them, and proof they are whole.

Pure Python (standard library only), shared by the ``model_files`` module, the
``model_store_plan`` filter and preflight, and unit tested directly.

- A model entry's ``source`` says where the files come from: a Hugging Face repository at a
  pinned commit (``type: hf``), a directory on the host or on shared storage (``type: dir``),
  or an HTTP(S) archive with its sha256 (``type: archive``). :func:`check_source` reports every
  problem of it at once, in :class:`~model_entry.Problem` form.
- :func:`plan` picks, per model, the ONE host that fetches from outside; the other holders
  receive the files from it over the fabric. Which hosts hold which model is the fleet plan's
  (``fleet_plan.placements``: the entries a host is a node of).
- A manifest (``{path: {size, sha256 | git_sha1}}``) says what a whole checkpoint is: from the
  hub's tree listing (the LFS object id is the file's sha256; a regular file's oid is its git
  blob sha1), or from hashing the source directory / unpacked archive. :func:`verify` checks the
  files against it; a stamp (size and mtime of each file verified) lets a rerun trust files
  unchanged since, without re-hashing 100 GB.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import os
import re

from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import Problem, check, shown_url

SOURCE_TYPES = ("hf", "dir", "archive")

SOURCE_SPEC = {
    "type": {"type": "str", "required": True, "choices": list(SOURCE_TYPES),
             "description": "hf (Hugging Face repository), dir (directory) or archive (HTTP(S) tarball/zip)."},
    "repo": {"type": "str", "description": "hf: repository id, org/name."},
    "revision": {"type": "str", "description": "hf: the commit (40 hex digits) to fetch; a branch or tag only "
                                               "where model_store_require_pinned is false."},
    "allow_patterns": {"type": "list", "elements": "str", "description": "hf: only files matching one of these globs."},
    "ignore_patterns": {"type": "list", "elements": "str", "description": "hf: skip files matching these globs."},
    "gated": {"type": "bool", "default": False, "description": "hf: the repository is gated (needs model_store_hf_token)."},
    "path": {"type": "path", "description": "dir: absolute path of the checkpoint directory on the host."},
    "url": {"type": "str", "description": "archive: http(s) URL of a .tar, .tar.gz, .tgz or .zip."},
    "sha256": {"type": "str", "description": "archive: sha256 of the archive file."},
}

# Which keys each source type reads (type and gated aside).
TYPE_KEYS = {
    "hf": ("repo", "revision", "allow_patterns", "ignore_patterns", "gated"),
    "dir": ("path",),
    "archive": ("url", "sha256"),
}
REQUIRED_BY_TYPE = {"hf": ("repo", "revision"), "dir": ("path",), "archive": ("url", "sha256")}

COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".zip")

# Files the store writes next to the weights. The manifest travels with the files (receivers
# verify against it); the stamp is each host's own and never travels.
MANIFEST_FILE = ".sparkfleet-manifest.json"
STAMP_FILE = ".sparkfleet-verified.json"
# What is never part of a checkpoint: the store's stamp, huggingface_hub's local_dir metadata
# and partial downloads.
NOT_WEIGHTS = (STAMP_FILE, ".cache", ".sparkfleet-archive")

CHUNK = 8 * 1024 * 1024


def check_source(source, require_pinned=True, have_token=True):
    """Every problem of a model entry's ``source``, as :class:`Problem` with keys ``source.<key>``.

    ``require_pinned``: an hf revision must be a commit sha (model_store_require_pinned).
    ``have_token``: a token is configured (model_store_hf_token); a gated repository needs one."""
    normalized, problems = check(source, SOURCE_SPEC)
    for problem in problems:
        problem.key = "source" if problem.key is None else "source.%s" % problem.key
    if normalized is None:
        return problems
    kind = normalized["type"]
    if kind not in TYPE_KEYS:
        return problems
    bad = set(p.key for p in problems)

    def fail(key, value, what, fix):
        problems.append(Problem("source.%s" % key, value, what, fix))

    misspelt = set()
    for key in source:
        if key not in SOURCE_SPEC:
            misspelt.update(difflib.get_close_matches(str(key), list(SOURCE_SPEC), n=1))
    for key in REQUIRED_BY_TYPE[kind]:
        # a misspelt required key is reported once, as misspelt
        if normalized.get(key) is None and "source.%s" % key not in bad and key not in misspelt:
            fail(key, None, "required by a %s source but missing" % kind, "add '%s' (%s)" % (
                key, SOURCE_SPEC[key]["description"]))
    for key in sorted(source):
        if key in SOURCE_SPEC and key != "type" and key not in TYPE_KEYS[kind] and source[key] is not None:
            owner = [t for t in SOURCE_TYPES if key in TYPE_KEYS[t]]
            fail(key, shown_url(source[key]) if key == "url" else source[key],
                 "belongs to a %s source, not to type %s" % ("/".join(owner), kind),
                 "remove '%s' or set type: %s" % (key, owner[0]))
    if kind == "hf":
        repo, revision = normalized.get("repo"), normalized.get("revision")
        if repo and not REPO_ID.match(repo):
            fail("repo", repo, "not a repository id org/name", "write the repository as it appears on the hub, e.g. Qwen/Qwen3-8B")
        if revision and require_pinned and not COMMIT.match(revision):
            fail("revision", revision, "not pinned: a branch or tag can move, so two hosts or two runs could get different "
                 "weights (model_store_require_pinned is true)",
                 "pin the commit: 40 hex digits from the repository's 'Files and versions' history "
                 "(or huggingface_hub's HfApi().model_info(repo, revision=%r).sha)" % revision)
        if normalized.get("gated") and not have_token:
            fail("gated", True, "a gated repository needs a token and model_store_hf_token is empty",
                 "accept the model's terms on the hub and set model_store_hf_token (vaulted) to a read token")
    elif kind == "archive":
        url, sha256 = normalized.get("url"), normalized.get("sha256")
        if url and not re.match(r"^https?://", url):
            fail("url", shown_url(url), "not an http(s) URL", "give the archive's http:// or https:// address")
        elif url and not url.split("?")[0].lower().endswith(ARCHIVE_SUFFIXES):
            fail("url", shown_url(url), "not a known archive (%s)" % ", ".join(ARCHIVE_SUFFIXES),
                 "point at a tarball or zip file")
        if sha256 and not SHA256.match(sha256.lower()):
            fail("sha256", sha256, "not a sha256 (64 hex digits)", "write the archive's sha256sum")
    return problems


def fingerprint(source):
    """What identifies the content a source yields: a changed revision, pattern, path, url or
    checksum means other files; the stamp of the old content is not trusted for the new one."""
    keep = dict((k, source.get(k)) for k in sorted(source) if k != "gated" and source.get(k) is not None)
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def matches(path, allow_patterns=None, ignore_patterns=None):
    """huggingface_hub's filter_repo_objects rule: kept if it matches an allow pattern (or there
    are none) and no ignore pattern; a pattern ending in / means the whole folder."""
    def norm(patterns):
        return [p + "*" if p.endswith("/") else p for p in (patterns or [])]
    allow, ignore = norm(allow_patterns), norm(ignore_patterns)
    if allow and not any(fnmatch.fnmatch(path, p) for p in allow):
        return False
    return not any(fnmatch.fnmatch(path, p) for p in ignore)


def manifest_from_tree(entries, allow_patterns=None, ignore_patterns=None):
    """A manifest from the hub's tree listing (``/api/models/{repo}/tree/{rev}?recursive=true``).

    Each entry: ``{type, path, size, oid, lfs: {oid, size}}`` (the JSON) or an object with
    ``path, size, blob_id, lfs.sha256`` (huggingface_hub's RepoFile). LFS files are checked by
    sha256 (the LFS object id), regular files by their git blob sha1."""
    manifest = {}
    for entry in entries:
        if isinstance(entry, dict):
            if entry.get("type", "file") != "file":
                continue
            path, size, oid, lfs = entry["path"], entry["size"], entry.get("oid"), entry.get("lfs")
            lfs_sha = lfs and (lfs.get("oid") or lfs.get("sha256"))
            lfs_size = lfs and lfs.get("size")
        else:
            if not hasattr(entry, "blob_id"):
                continue  # a folder
            path, size, oid, lfs = entry.path, entry.size, entry.blob_id, entry.lfs
            lfs_sha = lfs and lfs.sha256
            lfs_size = lfs and lfs.size
        if not matches(path, allow_patterns, ignore_patterns):
            continue
        if lfs_sha:
            manifest[path] = {"size": int(lfs_size if lfs_size is not None else size), "sha256": lfs_sha}
        else:
            manifest[path] = {"size": int(size), "git_sha1": oid}
    return manifest


def hash_file(path, algorithm):
    """sha256 of a file, or its git blob sha1 (``git_sha1``: sha1 of 'blob <size>\\0' + content)."""
    if algorithm == "git_sha1":
        digest = hashlib.sha1()
        digest.update(b"blob %d\0" % os.path.getsize(path))
    else:
        digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def weight_files(directory):
    """Relative paths of the checkpoint's files under ``directory`` (the store's own files excluded)."""
    found = []
    for base, dirs, names in os.walk(directory):
        rel_base = os.path.relpath(base, directory)
        if rel_base == ".":
            dirs[:] = [d for d in dirs if d not in NOT_WEIGHTS]
        dirs.sort()
        for name in sorted(names):
            rel = name if rel_base == "." else os.path.join(rel_base, name).replace(os.sep, "/")
            if rel in NOT_WEIGHTS or rel == MANIFEST_FILE or rel.startswith(".sparkfleet-archive"):
                continue
            found.append(rel)
    return found


# Files that hold the weights themselves (what the GPU loads); config, tokenizer and the
# like are small and are not counted in the memory arithmetic.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def weights_bytes(manifest):
    """Bytes of the weight files of a manifest (``{path: {size, ...}}``); None when it lists none.

    This is the real size the checkpoint occupies on disk, and what vLLM loads: the memory
    arithmetic uses it instead of the estimate from ``params_b`` once a manifest is known."""
    sizes = [int(spec.get("size") or 0) for path, spec in (manifest or {}).items()
             if isinstance(spec, dict) and str(path).lower().endswith(WEIGHT_SUFFIXES)]
    return sum(sizes) if sizes else None


def manifest_from_dir(directory):
    """A manifest by hashing every file of a directory (dir and archive sources): sha256 each."""
    return dict((rel, {"size": os.path.getsize(os.path.join(directory, rel)),
                       "sha256": hash_file(os.path.join(directory, rel), "sha256")})
                for rel in weight_files(directory))


def _expected(spec):
    return ("sha256", spec["sha256"]) if spec.get("sha256") else ("git_sha1", spec["git_sha1"])


def read_json(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _file_state(full):
    stat = os.stat(full)
    return [stat.st_size, stat.st_mtime_ns]


def stamp_trusts(directory, manifest, fp, stamp):
    """True when ``stamp`` proves every file of ``manifest`` whole without hashing: the same source
    fingerprint and manifest, and each file still of the size and mtime it had when verified."""
    if not stamp or stamp.get("fingerprint") != fp or stamp.get("manifest") != manifest_digest(manifest):
        return False
    files = stamp.get("files") or {}
    for rel in manifest:
        full = os.path.join(directory, rel)
        try:
            if files.get(rel) != _file_state(full):
                return False
        except OSError:
            return False
    return True


def manifest_digest(manifest):
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()


def verify(directory, manifest, stamp=None, fp=None, reverify=False, remove_bad=False):
    """Check the files of ``directory`` against ``manifest``.

    A file whose size and mtime the stamp recorded (same fingerprint and manifest) is trusted
    unless ``reverify``; any other file is hashed. Returns a dict: ``ok``, ``missing``, ``bad``
    (``{path: why}``), ``hashed`` (paths hashed this time), ``hashed_bytes``, ``removed``, ``states`` (size and
    mtime of each file found whole) and ``stamp`` (the new stamp when every file is whole, else None). ``remove_bad`` deletes a file
    that does not match, so the next fetch replaces it."""
    trusted = {}
    if not reverify and stamp and stamp.get("fingerprint") == fp and stamp.get("manifest") == manifest_digest(manifest):
        trusted = stamp.get("files") or {}
    states = {}
    result = {"ok": [], "missing": [], "bad": {}, "hashed": [], "hashed_bytes": 0, "removed": [], "stamp": None,
              "states": states}
    for rel in sorted(manifest):
        spec = manifest[rel]
        full = os.path.join(directory, rel)
        if not os.path.isfile(full):
            result["missing"].append(rel)
            continue
        state = _file_state(full)
        if state[0] != spec["size"]:
            result["bad"][rel] = "size %d, expected %d" % (state[0], spec["size"])
        elif trusted.get(rel) == state:
            result["ok"].append(rel)
            states[rel] = state
            continue
        else:
            algorithm, want = _expected(spec)
            got = hash_file(full, algorithm)
            result["hashed"].append(rel)
            result["hashed_bytes"] += state[0]
            if got == want:
                result["ok"].append(rel)
                states[rel] = state
                continue
            result["bad"][rel] = "%s %s, expected %s" % (algorithm, got, want)
        if remove_bad:
            os.unlink(full)
            result["removed"].append(rel)
    if not result["missing"] and not result["bad"]:
        result["stamp"] = {"fingerprint": fp, "manifest": manifest_digest(manifest), "files": states}
    return result


def need_bytes(directory, manifest):
    """Bytes still to be placed in ``directory``: files missing or of the wrong size (a file of
    the right size is counted as present; if it turns out corrupt it is replaced in place)."""
    need = 0
    for rel, spec in manifest.items():
        try:
            if os.path.getsize(os.path.join(directory, rel)) == spec["size"]:
                continue
        except OSError:
            pass
        need += spec["size"]
    return need


def free_bytes(path):
    """``(existing path, free bytes)`` of the filesystem that will hold ``path`` (its nearest
    existing ancestor), as an unprivileged writer sees it (f_bavail)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    stat = os.statvfs(probe)
    return probe, stat.f_bavail * stat.f_frsize


def human(nbytes):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(nbytes) < 1024 or unit == "TiB":
            return ("%d %s" % (nbytes, unit)) if unit == "B" else ("%.1f %s" % (nbytes, unit))
        nbytes /= 1024.0
    return str(nbytes)  # pragma: no cover


def disk_problem(host, path, need, free, reserve, models):
    """The refusal text when ``need`` + ``reserve`` bytes do not fit in ``free``, else None."""
    if need + reserve <= free:
        return None
    return ("%s: %s has %s free but the models %s need %s more (plus model_store_reserve_bytes %s). Fix: free space "
            "on that filesystem, point sparkfleet_model_store_dir at a larger one, or hold fewer models on this host"
            % (host, path, human(free), ", ".join(models), human(need), human(reserve)))


def plan(holders_by_host, addresses, store_dir):
    """Who fetches what, and from whom the others receive it.

    ``holders_by_host``: ``{host: [placement, ...]}`` in inventory order: the models the fleet plan
    gives each host (``fleet_plan.placements``: ``{name, nodes, model}``, ``model`` the entry as
    written), only those whose entry has a ``source``. ``addresses``: ``{host: fabric address}``.
    Placements are one model when they share name and source fingerprint. The fetcher is the first
    of the model's ``nodes`` (the plan's) that holds it, else the first holder in inventory order.
    Returns ``{host: [job, ...]}``; a job is ``{name, source, dest, fingerprint, fetcher,
    fetcher_address, holders, role}`` with role ``fetch`` or ``receive``."""
    groups = {}
    order = []
    for host, places in holders_by_host.items():
        for place in places:
            source = place["model"]["source"]
            key = (place["name"], fingerprint(source))
            if key not in groups:
                groups[key] = {"source": source, "nodes": place["nodes"], "holders": []}
                order.append(key)
            groups[key]["holders"].append(host)
    jobs = dict((host, []) for host in holders_by_host)
    for key in order:
        group = groups[key]
        holders = group["holders"]
        nodes = [n for n in group["nodes"] if n in holders]
        fetcher = nodes[0] if nodes else holders[0]
        for host in holders:
            jobs[host].append({
                "name": key[0],
                "source": group["source"],
                "dest": "%s/%s" % (store_dir.rstrip("/"), key[0]),
                "fingerprint": key[1],
                "fetcher": fetcher,
                "fetcher_address": addresses.get(fetcher),
                "holders": holders,
                "role": "fetch" if host == fetcher else "receive",
            })
    return jobs


# Files of at most this size are recorded by content for sparkfleet.gb10.role_state; larger ones by size and time.
STATE_HASH_BYTES = 16 * 1024 * 1024


def state_files(jobs, manifests, store_dir, also=(), hash_bytes=STATE_HASH_BYTES):
    """What a complete model_store run leaves on a host, for sparkfleet.gb10.role_state: ``paths`` (recorded by
    content: the store and rsync's partial-file directory, ``also``, each model's directory, manifest and stamp, and
    each file of its manifest of at most ``hash_bytes``) and ``stat_paths`` (recorded by size and modification time:
    the larger weights, which a full run proves against the manifest's sha256; hashing them at every confirmation
    would read every model whole). ``jobs``: the host's jobs of the model store plan (``name``, ``dest``);
    ``manifests``: ``{model name: {path: {size, ...}}}`` of the models it holds (a model without one yet: its
    directory only)."""
    paths = [store_dir, os.path.join(store_dir, ".partial")] + list(also or [])
    stat_paths = []
    for job in jobs or []:
        dest = job["dest"]
        paths += [dest, os.path.join(dest, MANIFEST_FILE), os.path.join(dest, STAMP_FILE)]
        for rel, entry in sorted(((manifests or {}).get(job["name"]) or {}).items()):
            big = int((entry or {}).get("size") or 0) > hash_bytes
            (stat_paths if big else paths).append(os.path.join(dest, rel))
    seen = set()
    return {"paths": [p for p in paths if not (p in seen or seen.add(p))], "stat_paths": stat_paths}
