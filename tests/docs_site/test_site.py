# -*- coding: utf-8 -*-
"""The docs site `make docs-site` renders (build/docs-site/html), opened in a
real headless browser (Debian's chromium): every module, filter, callback,
lookup and role of the repository has its page, linked from the collection
index, and each page renders without an error.

The browser is driven through the Chrome DevTools protocol over a pipe
(``--remote-debugging-pipe``: NUL-terminated JSON on file descriptors 3 and 4),
so one browser process opens every page and no driver package is needed. What
is judged is what the browser rendered: the DOM after the load event, the
visible text (``innerText``, which needs layout), and the script errors the
page raised.

The expected pages come from the repository, not from the site:
plugins/modules/*.py, the filters plugins/filter/ registers (a .yml beside a
file of several filters, or the file's own DOCUMENTATION), plugins/callback,
plugins/lookup and roles/*/meta/argument_specs.yml.

    make docs-site-test          (builds the site first)
"""

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("DOCS_SITE_HTML", ROOT / "build" / "docs-site" / "html"))
COLLECTION = SITE / "collections" / "sparkfleet" / "gb10"
FQCN = "sparkfleet.gb10"

# What antsibull-docs and Sphinx put on a page they could not render right.
ERROR_TEXT = ("was malformed", "The errors were:", "Unknown directive type", "Unknown interpreted text role",
              "ERROR/3", "SEVERE/4")
ERROR_SELECTOR = ".system-message, .problematic, .admonition.error"


def _own_filter_name(path):
    from ansible.parsing.plugin_docs import read_docstring
    doc = read_docstring(str(path), verbose=False, ignore_errors=True).get("doc") or {}
    return doc.get("name")


def expected_pages():
    """(type, name) of every page the repository's plugins and roles call for."""
    pages = set()
    for kind, folder in (("module", "modules"), ("callback", "callback"), ("lookup", "lookup")):
        pages |= {(kind, p.stem) for p in (ROOT / "plugins" / folder).glob("*.py") if p.name != "__init__.py"}
    filters = ROOT / "plugins" / "filter"
    pages |= {("filter", p.stem) for p in filters.glob("*.yml")}
    pages |= {("filter", name) for name in map(_own_filter_name, filters.glob("*.py")) if name}
    pages |= {("role", p.parent.parent.name) for p in (ROOT / "roles").glob("*/meta/argument_specs.yml")}
    return sorted(pages)


PAGES = expected_pages()


class Browser:
    """Headless chromium, one tab, spoken to over --remote-debugging-pipe."""

    def __init__(self, executable):
        self.profile = tempfile.mkdtemp(prefix="docs-site-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds_3_and_4():
            # chromium reads commands on fd 3 and writes answers on fd 4.
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, close_fds=False, preexec_fn=fds_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _send(self, message):
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time (log: %s)" % self.log.name)
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe (log: %s)" % self.log.name)
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, session=False, timeout=30, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError("%s: %s" % (method, answer["error"]))
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._receive(deadline))

    def render(self, path):
        """Open a page and return what the browser rendered, and the script errors it raised."""
        self.events.clear()
        nav = self.call("Page.navigate", session=True, url=path.as_uri())
        if nav.get("errorText"):
            return {"error": nav["errorText"]}
        self.wait_event("Page.loadEventFired")
        facts = self.call("Runtime.evaluate", session=True, returnByValue=True, expression=PAGE_FACTS)
        value = json.loads(facts["result"]["value"])
        value["exceptions"] = [e["params"]["exceptionDetails"].get("text", "") + " " + json.dumps(
            e["params"]["exceptionDetails"].get("exception", {}).get("description", ""))
            for e in self.events if e.get("method") == "Runtime.exceptionThrown"]
        return value

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - it may be gone already; the process is waited for below
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


PAGE_FACTS = """JSON.stringify((() => {
  const main = document.querySelector('[role=main]') || document.body;
  const h1 = document.querySelector('h1');
  return {
    title: document.title,
    h1: h1 ? h1.innerText : '',
    text: main ? main.innerText : '',
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    unresolved: [...document.querySelectorAll('span.xref')].filter(s => !s.closest('a')).map(s => s.textContent),
    markers: [...document.querySelectorAll('%s')].map(e => e.textContent.slice(0, 300)),
  };
})())""" % ERROR_SELECTOR


@pytest.fixture(scope="module")
def browser():
    assert (SITE / "index.html").is_file(), f"no site at {SITE}: run make docs-site first"
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    assert executable, "chromium is missing: make docs-site-test installs it (tools/chromium-setup.sh)"
    b = Browser(executable)
    yield b
    b.close()


_rendered = {}


def rendered(browser, path):
    if path not in _rendered:
        _rendered[path] = browser.render(path)
    return _rendered[path]


def page_path(kind, name):
    return COLLECTION / f"{name}_{kind}.html"


def ids_of(path, cache={}):  # noqa: B006 - a cache across calls on purpose  # pylint: disable=dangerous-default-value
    if path not in cache:
        cache[path] = set(re.findall(r'\sid="([^"]+)"', path.read_text(errors="replace")))
    return cache[path]


def broken_links(page, facts):
    """Links from the page to the site's own files that lead nowhere (file or anchor)."""
    broken = []
    for href in facts["links"]:
        target = urlparse(urljoin(page.as_uri(), href))
        path = Path(unquote(target.path))
        if target.scheme != "file" or SITE.resolve() not in path.resolve().parents:
            continue  # the theme's links out of the site (its logo links "/")
        if not path.is_file():
            broken.append(f"{href} (no such file)")
        elif target.fragment:
            ids = set(facts["ids"]) if path == page else ids_of(path)
            if unquote(target.fragment) not in ids:
                broken.append(f"{href} (no such anchor)")
    return broken


def test_the_repository_has_pages_to_expect():
    kinds = {kind for kind, _name in PAGES}
    assert kinds == {"module", "filter", "callback", "lookup", "role"}, kinds
    assert len(PAGES) > 50, PAGES


INDEXES = ["index.html", "collections/sparkfleet/gb10/index.html"] + [
    f"collections/index_{kind}.html" for kind in sorted({kind for kind, _name in PAGES})]


@pytest.mark.parametrize("index", INDEXES)
def test_index_renders_and_links_its_pages(browser, index):
    """The site's index links the collections and the plugin indexes; the collection's index links every page,
    each plugin index every page of its kind."""
    path = SITE / index
    facts = rendered(browser, path)
    assert "error" not in facts, facts
    assert not facts["exceptions"], facts["exceptions"]
    assert not facts["markers"], facts["markers"]
    assert broken_links(path, facts) == []
    reached = {Path(unquote(urlparse(urljoin(path.as_uri(), h)).path)) for h in facts["links"]}
    if index == "index.html":
        wanted = [SITE / "collections" / "index.html"] + [SITE / i for i in INDEXES[2:]]
        assert [str(w.relative_to(SITE)) for w in wanted if w not in reached] == []
        return
    kind = re.match(r"collections/index_(\w+)\.html", index)
    pages = [(k, n) for k, n in PAGES if not kind or k == kind.group(1)]
    missing = [f"{name} ({k})" for k, name in pages if page_path(k, name) not in reached]
    assert missing == [], f"{index} links no page for: {', '.join(missing)}"


@pytest.mark.parametrize("kind,name", PAGES, ids=[f"{k}:{n}" for k, n in PAGES])
def test_page_renders_without_error(browser, kind, name):
    path = page_path(kind, name)
    assert path.is_file(), f"{path.relative_to(SITE)} was not rendered"
    facts = rendered(browser, path)
    assert "error" not in facts, f"the browser could not open {path}: {facts['error']}"
    heading = f"{FQCN}.{name} {kind}"
    assert facts["h1"].startswith(heading), f"heading {facts['h1']!r}, expected it to start with {heading!r}"
    problems = [t for t in ERROR_TEXT if t in facts["text"]]
    assert not problems and not facts["markers"], \
        f"{path.name} shows a rendering error: {problems or facts['markers']}\n{facts['text'][:1500]}"
    # An empty page: the heading and the index links only. Every page documents at least a description.
    assert len(facts["text"]) > len(facts["h1"]) + 200, f"{path.name} is (nearly) empty: {facts['text']!r}"
    own = [u for u in facts["unresolved"] if u.startswith(FQCN + ".")]
    assert own == [], f"{path.name} refers to the collection's own {own}, which has no page (a broken reference)"
    assert broken_links(path, facts) == [], f"{path.name} has broken links"
    assert not facts["exceptions"], f"{path.name} raised script errors: {facts['exceptions']}"
