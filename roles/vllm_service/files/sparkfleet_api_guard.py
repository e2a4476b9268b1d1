# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The API key on every route of a vLLM server, not only under /v1.

vLLM's own check (--api-key / VLLM_API_KEY) guards the paths under /v1, /v2, /inference and
/cohere only: /invocations (the same completions), /tokenize, /detokenize, /pooling, /score and
the other routes answer anyone who reaches the port. sparkfleet.gb10.vllm_service installs this
module beside the unit and starts each keyed service with

    --middleware sparkfleet_api_guard.require_key        (PYTHONPATH: this file's directory)

so that every route needs ``Authorization: Bearer <VLLM_API_KEY>``, except the few that a load
balancer, Prometheus or the health probe read without one (OPEN_PATHS). Without VLLM_API_KEY in
the environment (an entry with api_key: none) it lets everything through, as vLLM does.
"""

import hashlib
import hmac
import os

# Readable without the key: liveness, readiness, Prometheus metrics and the version string.
OPEN_PATHS = frozenset(("/health", "/ping", "/metrics", "/version"))


def _digest(value):
    return hashlib.sha256(value.encode("utf-8")).digest()


def _keys(environ=None):
    key = (os.environ if environ is None else environ).get("VLLM_API_KEY") or ""
    return [_digest(key)] if key else []


KEYS = _keys()


def allowed(method, path, authorization, keys=None):
    """Whether a request may pass: no key set, a CORS preflight, an open path, or the right bearer token."""
    keys = KEYS if keys is None else keys
    if not keys or method == "OPTIONS" or path in OPEN_PATHS:
        return True
    scheme, _space, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    given = _digest(token.strip())
    return any(hmac.compare_digest(given, key) for key in keys)


async def require_key(request, call_next):
    """vLLM's --middleware hook (a function: added as an HTTP middleware of the API server)."""
    path = request.url.path
    root = request.scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root):]
    if allowed(request.method, path, request.headers.get("authorization")):
        return await call_next(request)
    from starlette.responses import JSONResponse  # vLLM's web framework, there whenever vLLM runs this

    return JSONResponse(content={"error": "Unauthorized"}, status_code=401)
