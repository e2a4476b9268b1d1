#!/usr/bin/python3
# Apache-2.0
"""Drops the page cache before a model loads: on this host, or on every member of a multi-node model.

Managed by sparkfleet.gb10.vllm_service (rule members_drop_page_cache). A follower of a multi-node model
loads its share again at every start of the model's head, and under the ray executor it loads inside a Ray
worker that may have run for days; so the head's start asks each member to drop first and waits for the
answers. Three modes:

- ``local``: drops this host's page cache (the drop command; as root, the '+' ExecStartPre of a vLLM unit)
  and records it.
- ``serve``: answers one request of a model's head, on the connection systemd accepted for the member's
  socket unit (stdin and stdout; the peer's address in REMOTE_ADDR). Only a head of a model this host
  follows is answered (``--allow``): the host drops its page cache, records it, then answers.
- ``ask``: the head's start (an ExecStartPre of its vLLM unit, before vLLM, so before any placement group or
  rendezvous exists): asks every member over the fabric from the head's own fabric address and returns once
  each answered that it dropped. A member that cannot be reached yet is asked again every few seconds until
  it answers or systemd ends the start at the unit's TimeoutStartSec; a member that refuses, or whose drop
  failed, fails the start at once, naming it.

Each drop is recorded in one JSON file (``--state``, in a root-owned directory): ``last`` (the last drop that
worked) and ``recent`` (the last few, also failed ones), each with when it finished (``at``, wall clock;
``monotonic``, CLOCK_MONOTONIC, the clock of systemd's ``*TimestampMonotonic``), how long it took, how it
was asked for (``local`` or ``asked``), the unit and model it was for, and who asked. The health probe and
the fleet table read it. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RECENT = 50
REQUEST_LIMIT = 4096
PROTOCOL = 1


def now():
    """(wall clock, CLOCK_MONOTONIC) in seconds."""
    return time.time(), time.monotonic()


def drop(command, timeout):
    """Runs the drop command (``/bin/sh -c``); ``(ok, seconds, error)``."""
    started = time.monotonic()
    try:
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started, "the drop command ran longer than %d s" % timeout
    except OSError as exc:
        return False, time.monotonic() - started, "the drop command could not run: %s" % exc
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        return False, seconds, "the drop command exited %d%s" % (proc.returncode, ": " + said[-1] if said else "")
    return True, seconds, None


def read_state(path):
    """The state file's content; an empty state when it is missing or unreadable."""
    try:
        with open(path) as handle:
            state = json.load(handle)
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def record(path, entry):
    """Adds ``entry`` to the state file (under a lock, replaced whole): ``recent`` keeps the last RECENT
    entries, ``last`` the last one that worked."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o755, exist_ok=True)
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read_state(path)
        state["recent"] = (list(state.get("recent") or []) + [entry])[-RECENT:]
        if entry.get("ok"):
            state["last"] = entry
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".drops-")
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(state, out, indent=1, sort_keys=True)
                out.write("\n")
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def drop_and_record(args, how, unit, model, head, peer):
    ok, seconds, error = drop(args.command, args.drop_timeout)
    at, monotonic = now()
    entry = {"at": round(at, 3), "monotonic": round(monotonic, 6), "seconds": round(seconds, 3), "ok": ok, "how": how,
             "unit": unit, "model": model, "head": head, "peer": peer}
    if error:
        entry["error"] = error
    record(args.state, entry)
    return entry


# ------------------------------------------------------------------ local

def local(args):
    entry = drop_and_record(args, "local", args.unit, args.model, None, None)
    if not entry["ok"]:
        print("page cache not dropped before %s: %s" % (args.unit or "this start", entry["error"]), file=sys.stderr)
        return 1
    print("page cache dropped in %.1f s before %s" % (entry["seconds"], args.unit or "this start"))
    return 0


# ------------------------------------------------------------------ serve (a member)

def plain_address(address):
    """An IPv4 peer as systemd hands it on an IPv6 socket (::ffff:a.b.c.d) in its plain form."""
    address = (address or "").strip()
    return address[7:] if address.lower().startswith("::ffff:") and "." in address else address


def answer(reply):
    sys.stdout.buffer.write((json.dumps(reply, sort_keys=True) + "\n").encode())
    sys.stdout.buffer.flush()


def serve(args):
    peer = plain_address(os.environ.get("REMOTE_ADDR"))
    line = sys.stdin.buffer.readline(REQUEST_LIMIT)
    try:
        request = json.loads(line.decode() or "null")
        if not isinstance(request, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        print("page cache: a request from %s that is no request (%s)" % (peer or "?", exc), file=sys.stderr)
        answer({"ok": False, "host": args.host, "error": "not a request of sparkfleet.gb10's page-cache drop"})
        return 1
    allowed = set(plain_address(a) for a in args.allow)
    if peer not in allowed:
        error = ("%s is not the fabric address of a head of a model %s follows (%s)"
                 % (peer or "an unknown peer", args.host, ", ".join(sorted(allowed)) or "none"))
        print("page cache: refused: %s" % error, file=sys.stderr)
        answer({"ok": False, "host": args.host, "error": error})
        return 1
    entry = drop_and_record(args, "asked", request.get("unit"), request.get("model"), request.get("head"), peer)
    # stdout is the connection: what the journal gets goes to stderr.
    if entry["ok"]:
        print("page cache dropped in %.1f s for %s of %s (asked by %s, %s)"
              % (entry["seconds"], request.get("unit"), request.get("model"), request.get("head"), peer), file=sys.stderr)
    else:
        print("page cache NOT dropped for %s of %s (asked by %s, %s): %s"
              % (request.get("unit"), request.get("model"), request.get("head"), peer, entry["error"]), file=sys.stderr)
    answer({"ok": entry["ok"], "host": args.host, "at": entry["at"], "seconds": entry["seconds"],
            "error": entry.get("error")})
    return 0 if entry["ok"] else 1


# ------------------------------------------------------------------ ask (the head's start)

class Fatal(Exception):
    """A member answered and said no: asking again would not change it."""


def parse_member(text):
    """``host=address:port`` as ``(host, address, port)``."""
    host, sep, where = text.partition("=")
    address, colon, port = where.rpartition(":")
    if not (sep and colon and host and address and port.isdigit()):
        raise argparse.ArgumentTypeError("%r: write a member as host=address:port" % text)
    return host, address.strip("[]"), int(port)


def ask_once(member, request, source, connect_timeout, reply_timeout):
    """One request to a member: its reply (ok), Fatal (it answered no), OSError (not reached or no answer)."""
    _host, address, port = member
    with socket.create_connection((address, port), timeout=connect_timeout,
                                  source_address=(source, 0) if source else None) as sock:
        sock.settimeout(reply_timeout)
        sock.sendall((json.dumps(request, sort_keys=True) + "\n").encode())
        data = b""
        while not data.endswith(b"\n") and len(data) < REQUEST_LIMIT:
            chunk = sock.recv(REQUEST_LIMIT)
            if not chunk:
                break
            data += chunk
    if not data.strip():
        raise ConnectionError("the member closed the connection without an answer")
    try:
        reply = json.loads(data.decode())
    except ValueError:
        raise Fatal("the member answered something that is no answer: %r" % data[:200])
    if not isinstance(reply, dict) or not reply.get("ok"):
        raise Fatal((reply or {}).get("error") or "the member answered no")
    return reply


class Asking(object):
    """Asks every member at once (a thread each) and keeps what each answered."""

    def __init__(self, members, request, args):
        self.members = members
        self.request = request
        self.args = args
        self.done = {}
        self.failed = {}
        self.waiting = dict((m[0], "not asked yet") for m in members)
        self.lock = threading.Lock()
        self.finished = threading.Event()

    def name(self, member):
        return "%s (%s:%d)" % member

    def run_member(self, member):
        last_said = None
        while True:
            try:
                reply = ask_once(member, self.request, self.args.source, self.args.connect_timeout,
                                 self.args.reply_timeout)
            except Fatal as exc:
                with self.lock:
                    self.failed[member[0]] = str(exc)
                    self.waiting.pop(member[0], None)
                print("page cache: %s refused: %s" % (self.name(member), exc), file=sys.stderr, flush=True)
                break
            except OSError as exc:
                with self.lock:
                    self.waiting[member[0]] = str(exc) or type(exc).__name__
                if last_said is None or time.monotonic() - last_said >= self.args.say_every:
                    print("page cache: waiting for %s: %s" % (self.name(member), exc or type(exc).__name__),
                          file=sys.stderr, flush=True)
                    last_said = time.monotonic()
                time.sleep(self.args.retry_every)
                continue
            with self.lock:
                self.done[member[0]] = reply
                self.waiting.pop(member[0], None)
            print("page cache: %s dropped its page cache in %.1f s" % (self.name(member), reply.get("seconds") or 0.0),
                  flush=True)
            break
        with self.lock:
            if len(self.done) + len(self.failed) == len(self.members):
                self.finished.set()

    def run(self):
        for member in self.members:
            threading.Thread(target=self.run_member, args=(member,), daemon=True).start()
        while not self.finished.wait(1.0):  # in steps, so systemd's SIGTERM is handled at once
            pass
        return not self.failed


def ask(args):
    members = args.member
    if not members:
        return 0
    request = {"v": PROTOCOL, "model": args.model, "unit": args.unit, "head": args.head}
    asking = Asking(members, request, args)

    def stopped(_signum, _frame):
        with asking.lock:
            pending = ["%s: %s" % (host, said) for host, said in sorted(asking.waiting.items())]
        print("page cache: the start of %s ended before every member dropped its page cache; still waiting for %s. "
              "Fix: bring the member back on the fabric (its socket unit %s listens on its fabric address), or take "
              "it out of the model's nodes" % (args.unit, "; ".join(pending) or "none", args.socket_unit),
              file=sys.stderr, flush=True)
        os._exit(1)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    if asking.run():
        return 0
    for host, error in sorted(asking.failed.items()):
        print("page cache: %s did not drop its page cache for %s: %s" % (host, args.unit, error), file=sys.stderr)
    return 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("local", "serve"):
        one = sub.add_parser(mode)
        one.add_argument("--command", required=True, help="the drop command (/bin/sh -c)")
        one.add_argument("--state", required=True, help="the JSON file each drop is recorded in")
        one.add_argument("--drop-timeout", type=int, default=300)
        if mode == "local":
            one.add_argument("--unit", default=None)
            one.add_argument("--model", default=None)
        else:
            one.add_argument("--host", required=True, help="this host's inventory name (in the answer)")
            one.add_argument("--allow", action="append", default=[], help="a head's fabric address")
    one = sub.add_parser("ask")
    one.add_argument("--member", action="append", type=parse_member, default=[], help="host=address:port")
    one.add_argument("--source", default=None, help="this head's fabric address (the members accept it)")
    one.add_argument("--model", required=True)
    one.add_argument("--unit", required=True)
    one.add_argument("--head", required=True)
    one.add_argument("--socket-unit", default="sparkfleet-page-cache.socket")
    one.add_argument("--connect-timeout", type=float, default=5.0)
    one.add_argument("--reply-timeout", type=float, default=300.0)
    one.add_argument("--retry-every", type=float, default=5.0)
    one.add_argument("--say-every", type=float, default=30.0)
    args = parser.parse_args(argv)
    return {"local": local, "serve": serve, "ask": ask}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
