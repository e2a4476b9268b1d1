#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""TEST STAND-IN for the Hugging Face Hub. Not a hub: only the subset of its HTTP API
that ``huggingface_hub``'s ``snapshot_download`` / ``hf_hub_download`` / ``HfApi.repo_info``
/ ``HfApi.list_repo_tree`` use, so the real client can be exercised without the internet.

Served (``{repo}`` is ``org/name``, ``{rev}`` the pinned commit or ``main``):

- ``GET /api/models/{repo}/revision/{rev}``: id, sha, siblings (rfilename, size, blobId, lfs)
- ``GET /api/models/{repo}/tree/{rev}?recursive=true``: files with oid (git blob sha1),
  size and, for LFS files, ``lfs: {oid: sha256, size, pointerSize}``
- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag`` (git blob sha1 of
  a regular file, sha256 of an LFS file), ``X-Linked-Etag`` / ``X-Linked-Size`` for LFS files,
  ``Accept-Ranges`` and ``Range`` (206) so an interrupted download resumes
- errors as the hub signals them: ``X-Error-Code`` RepoNotFound, RevisionNotFound,
  EntryNotFound, GatedRepo (a gated repository without the right bearer token)

What the tests read (the stand-in's own paths, under ``/_standin/``):

- ``GET /_standin/stats``: per client address: requests, body bytes, bytes per ``repo/path``,
  Range requests
- ``POST /_standin/reset``: forget the counts
- ``POST /_standin/throttle?bps=N``: slow every body to N bytes/s (0: full speed), so a test
  can kill a transfer midway

Repositories come from a JSON file (``--repos``)::

    {"org/name": {"dir": "/srv/hub/tiny", "commit": "<40 hex>", "token": null}}

A repository with a ``token`` is gated: its files need ``Authorization: Bearer <token>``.
Files larger than ``--lfs-threshold`` bytes, and every ``*.safetensors``, are LFS files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

CHUNK = 1 << 20


def git_blob_sha1(path):
    """The git object id of a file's content (what the hub calls a regular file's oid)."""
    digest = hashlib.sha1()
    digest.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def lfs_pointer(sha256, size):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha256, size)).encode()


def describe_repo(directory, lfs_threshold, cache=None):
    """``{path: {size, oid, lfs?}}`` of every file under ``directory`` (hidden files skipped).

    ``cache`` maps ``path -> (size, mtime, entry)`` so a restart does not re-hash a large file."""
    files = {}
    cache = cache if cache is not None else {}
    for base, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            full = os.path.join(base, name)
            rel = os.path.relpath(full, directory).replace(os.sep, "/")
            stat = os.stat(full)
            known = cache.get(full)
            if known and known[0] == stat.st_size and known[1] == stat.st_mtime:
                files[rel] = known[2]
                continue
            if stat.st_size > lfs_threshold or name.endswith(".safetensors"):
                sha256 = file_sha256(full)
                pointer = lfs_pointer(sha256, stat.st_size)
                oid = hashlib.sha1(b"blob %d\0" % len(pointer) + pointer).hexdigest()
                entry = {"size": stat.st_size, "oid": oid,
                         "lfs": {"oid": sha256, "size": stat.st_size, "pointerSize": len(pointer)}}
            else:
                entry = {"size": stat.st_size, "oid": git_blob_sha1(full)}
            cache[full] = (stat.st_size, stat.st_mtime, entry)
            files[rel] = entry
    return files


class Hub(object):
    """The repositories served and the counts per client."""

    def __init__(self, repos, lfs_threshold):
        self.repos = {}
        for repo_id, spec in repos.items():
            self.repos[repo_id] = dict(spec, files=describe_repo(spec["dir"], lfs_threshold))
        self.lock = threading.Lock()
        self.stats = {}
        self.throttle_bps = 0

    def count(self, client, path=None, nbytes=0, request=False):
        with self.lock:
            entry = self.stats.setdefault(client, {"requests": 0, "bytes": 0, "files": {}, "ranged": 0})
            if request:
                entry["requests"] += 1
            entry["bytes"] += nbytes
            if path is not None and nbytes:
                entry["files"][path] = entry["files"].get(path, 0) + nbytes


RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")


class Handler(BaseHTTPRequestHandler):
    hub = None  # set by serve()
    protocol_version = "HTTP/1.1"
    server_version = "sparkfleet-hub-standin/1"

    def log_message(self, fmt, *args):  # one line per request on stderr, with the client
        sys.stderr.write("%s %s\n" % (self.client_address[0], fmt % args))

    # -- helpers -------------------------------------------------------------------------
    def _send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)
            self.hub.count(self.client_address[0], None, len(body))

    def _json(self, status, data, head=False, headers=None):
        self._send(status, json.dumps(data).encode(), dict({"Content-Type": "application/json"}, **(headers or {})), head)

    def _error(self, status, code, message, head=False, commit=None):
        headers = {"X-Error-Code": code, "X-Error-Message": message}
        if commit:
            headers["X-Repo-Commit"] = commit
        self._json(status, {"error": message}, head=head, headers=headers)

    def _repo(self, repo_id, rev, head=False):
        """The repository and its commit, or None after answering the error."""
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository Not Found for url: %s." % self.path, head)
            return None, None
        if repo.get("token") and self.headers.get("Authorization") != "Bearer %s" % repo["token"]:
            self._error(403 if self.headers.get("Authorization") else 401, "GatedRepo",
                        "Access to model %s is restricted. You must have access to it and be authenticated "
                        "to access it." % repo_id, head)
            return None, None
        if rev not in (repo["commit"], "main"):
            self._error(404, "RevisionNotFound", "Invalid rev id: %s" % rev, head)
            return None, None
        return repo, repo["commit"]

    # -- verbs ---------------------------------------------------------------------------
    def do_POST(self):
        self.hub.count(self.client_address[0], request=True)
        url = urlsplit(self.path)
        if url.path == "/_standin/reset":
            with self.hub.lock:
                self.hub.stats = {}
            return self._json(200, {"reset": True})
        if url.path == "/_standin/throttle":
            self.hub.throttle_bps = int(parse_qs(url.query).get("bps", ["0"])[0])
            return self._json(200, {"throttle_bps": self.hub.throttle_bps})
        return self._error(404, "EntryNotFound", "no such stand-in path")

    def do_HEAD(self):
        self._get(head=True)

    def do_GET(self):
        self._get(head=False)

    def _get(self, head):
        url = urlsplit(self.path)
        path = unquote(url.path)
        if path == "/_standin/stats":
            with self.hub.lock:
                data = json.loads(json.dumps(self.hub.stats))
            return self._json(200, data, head)
        self.hub.count(self.client_address[0], request=True)
        match = API.match(path)
        if match:
            repo, commit = self._repo(match.group("repo"), match.group("rev"), head)
            if repo is None:
                return None
            if match.group("kind") == "revision":
                siblings = [dict({"rfilename": p, "size": f["size"], "blobId": f["oid"]},
                                 **({"lfs": {"sha256": f["lfs"]["oid"], "size": f["lfs"]["size"],
                                             "pointerSize": f["lfs"]["pointerSize"]}} if "lfs" in f else {}))
                            for p, f in sorted(repo["files"].items())]
                return self._json(200, {"id": match.group("repo"), "modelId": match.group("repo"), "sha": commit,
                                        "private": False, "gated": "manual" if repo.get("token") else False,
                                        "siblings": siblings}, head)
            prefix = (match.group("path") or "").strip("/")
            recursive = parse_qs(url.query).get("recursive", ["false"])[0].lower() in ("true", "1")
            entries, folders = [], set()
            for rel, info in sorted(repo["files"].items()):
                if prefix and not rel.startswith(prefix + "/"):
                    continue
                rest = rel[len(prefix) + 1:] if prefix else rel
                if "/" in rest and not recursive:
                    folders.add((prefix + "/" if prefix else "") + rest.split("/")[0])
                    continue
                entries.append(dict({"type": "file", "oid": info["oid"], "size": info["size"], "path": rel},
                                    **({"lfs": info["lfs"]} if "lfs" in info else {})))
            entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(folders)]
            return self._json(200, entries, head)
        match = RESOLVE.match(path)
        if not match:
            return self._error(404, "EntryNotFound", "not a path of this stand-in: %s" % path, head)
        repo, commit = self._repo(match.group("repo"), match.group("rev"), head)
        if repo is None:
            return None
        rel = match.group("path")
        info = repo["files"].get(rel)
        if info is None:
            return self._error(404, "EntryNotFound", "%s does not exist at %s" % (rel, commit), head, commit)
        full = os.path.join(repo["dir"], rel)
        size = info["size"]
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream",
                   "ETag": '"%s"' % (info["lfs"]["oid"] if "lfs" in info else info["oid"])}
        if "lfs" in info:
            headers["X-Linked-Etag"] = '"%s"' % info["lfs"]["oid"]
            headers["X-Linked-Size"] = str(size)
        start, end, status = 0, size - 1, 200
        ranged = self.headers.get("Range")
        if ranged:
            found = re.match(r"bytes=(\d*)-(\d*)$", ranged.strip())
            if not found or (not found.group(1) and not found.group(2)):
                return self._send(416, b"", dict(headers, **{"Content-Range": "bytes */%d" % size}), head)
            if found.group(1):
                start = int(found.group(1))
                end = min(int(found.group(2)), size - 1) if found.group(2) else size - 1
            else:
                start = max(size - int(found.group(2)), 0)
            if start >= size or start > end:
                return self._send(416, b"", dict(headers, **{"Content-Range": "bytes */%d" % size}), head)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, size)
            with self.hub.lock:
                self.hub.stats.setdefault(self.client_address[0], {"requests": 0, "bytes": 0, "files": {},
                                                                   "ranged": 0})["ranged"] += 1
        length = end - start + 1 if size else 0
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if head or not length:
            return None
        with open(full, "rb") as handle:
            handle.seek(start)
            left = length
            while left > 0:
                bps = self.hub.throttle_bps
                block = handle.read(min(CHUNK if not bps else max(bps // 10, 1), left))
                if not block:
                    break
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    return None
                finally:
                    self.hub.count(self.client_address[0], match.group("repo") + "/" + rel, len(block))
                left -= len(block)
                if bps:
                    time.sleep(len(block) / float(bps))
        return None


def serve(repos, host="127.0.0.1", port=0, lfs_threshold=10 * 1024 * 1024):
    """A running stand-in (in a thread); ``server.server_address`` has the port. Stop with shutdown()."""
    hub = Hub(repos, lfs_threshold)
    handler = type("BoundHandler", (Handler,), {"hub": hub})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.hub = hub
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repos", required=True, help="JSON file: {repo_id: {dir, commit, token}}")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--lfs-threshold", type=int, default=10 * 1024 * 1024)
    args = parser.parse_args(argv)
    with open(args.repos) as handle:
        repos = json.load(handle)
    server = serve(repos, args.host, args.port, args.lfs_threshold)
    sys.stderr.write("hub stand-in on %s:%d serving %s\n" % (args.host, server.server_address[1], ", ".join(sorted(repos))))
    sys.stderr.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
