"""Browser tests of the built website (_build/html) in headless Chromium.

Build the site first (``bash scripts/build-site.sh``). Without a build or without
Chromium these tests are skipped with the reason shown, except on CI
(``CI=true``), where either is a failure.

Checked on every page of the table of contents (_toc.yml):
* it loads, every request succeeds (no ``requestfailed``, no HTTP status >= 400)
  and none leaves the site (only 127.0.0.1; data:/blob: URLs are fine);
* no JavaScript error (uncaught exception or console "error") apart from the
  stock-theme messages listed in KNOWN_THEME_ERRORS;
* its formulas are rendered by MathJax (``mjx-container``, no ``mjx-merror``);
* notebook pages link to Colab at the repository in _config.yml.
And on the pages with explorers (EXPLORER_PAGES), every control changes its
figure although the static page has no kernel, and moving every control many
times without waiting raises no error and ends on the right frame. On chapter 1,
an exercise's solution is hidden until its toggle is clicked.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from conftest import toc_docs

from attention import results

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
ON_CI = os.environ.get("CI", "").lower() == "true"
EXPLORER_PAGE = "notebooks/04-scores.html"
# Every page with an explorer (a Dropdown and a slider driving a figure).
EXPLORER_PAGES = [
    EXPLORER_PAGE,
    "notebooks/04b-coupled-attention.html",
    "notebooks/03b-alignment.html",
    "notebooks/06-transformer.html",
    "notebooks/05-hierarchical.html",
    "notebooks/05b-nested-attention.html",
    "notebooks/06b-intra-attention.html",
    "notebooks/07-memory.html",
    "notebooks/08-soft-hard.html",
    "notebooks/09-global-local.html",
    "notebooks/10-evaluation.html",
    "notebooks/11-closing.html",
    "notebooks/13-performance.html",
]
SHOTS = Path(tempfile.gettempdir())  # explorer-<page>.png before, explorer-<page>-after.png after
# A page with exercise solutions folded away (``:class: dropdown`` admonitions, sphinx-togglebutton).
SOLUTION_PAGE = "book/01-preface.html"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# JavaScript errors the stock theme (sphinx-book-theme / pydata-sphinx-theme /
# sphinx-thebe) prints on every page, matched by exact text. Empty at present:
# the one it used to print, "Identifier 'THEBE_JS_URL' has already been declared"
# (sphinx-thebe's inline config script registered twice), is removed at build
# time by book/_ext/static_site.py and so must not come back.
KNOWN_THEME_ERRORS: frozenset[str] = frozenset()

LOCAL_HOSTS = {"127.0.0.1"}
HARMLESS_SCHEMES = {"data", "blob", "about"}


def _unavailable(reason: str):
    """Skip locally, fail on CI: the CI job must really run these tests."""
    if ON_CI:
        pytest.fail(f"{reason} (CI=true, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


# ---------------------------------------------------------------------------
# What the site should contain, from the book's own configuration files


def _colab_base() -> str:
    """Colab URL prefix of a notebook, derived from _config.yml's repository."""
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = cfg["repository"]
    parts = urlparse(repo["url"]).path.strip("/").split("/")
    org, name = parts[0], parts[1].removesuffix(".git")
    colab = cfg["launch_buttons"]["colab_url"].rstrip("/")
    book = (repo.get("path_to_book") or "").strip("/")
    return f"{colab}/github/{org}/{name}/blob/{repo.get('branch', 'main')}/" + (f"{book}/" if book else "")


TOC_DOCS = toc_docs()
PAGES = [f"{doc}.html" for doc in TOC_DOCS]
NOTEBOOK_DOCS = [d for d in TOC_DOCS if (ROOT / f"{d}.ipynb").is_file() or d.startswith("notebooks/")]


# ---------------------------------------------------------------------------
# Fixtures: the built site, a local web server, headless Chromium


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "_static").is_dir():
        _unavailable(f"no built site at {SITE}: run `bash scripts/build-site.sh` first")
    missing = [p for p in PAGES if not (SITE / p).is_file()]
    if missing:
        pytest.fail(f"the build in {SITE} lacks pages listed in _toc.yml: {missing}")
    return SITE


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="session")
def base_url(site: Path):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        _unavailable("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install -r requirements.txt)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class PageLog:
    """Everything a page did that the tests judge."""

    def __init__(self):
        self.external: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if e not in KNOWN_THEME_ERRORS]

    def problems(self) -> dict[str, list[str]]:
        found = {
            "requests leaving the site": self.external,
            "failed requests": self.failed,
            "JavaScript errors": self.unexpected_errors(),
        }
        return {k: v for k, v in found.items() if v}


def _is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in HARMLESS_SCHEMES:
        return True
    return parsed.scheme in {"http", "https"} and parsed.hostname in LOCAL_HOSTS


def _playwright_timeout():
    try:
        from playwright.sync_api import TimeoutError as timeout
    except ImportError:  # the browser fixture skips/fails first
        timeout = TimeoutError
    return timeout


PlaywrightTimeout = _playwright_timeout()


@pytest.fixture
def open_page(browser, base_url):
    """open_page('book/x.html') -> (page, PageLog): loaded, fonts/math/widgets settled."""
    contexts = []

    def _open(path: str):
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        contexts.append(context)
        log = PageLog()

        def route(r):
            if _is_local(r.request.url):
                r.continue_()
            else:  # record and never let it leave the machine
                log.external.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on(
            "requestfailed",
            lambda req: log.failed.append(f"{req.url} ({req.failure})"),
        )
        page.on(
            "response",
            lambda resp: log.failed.append(f"{resp.url} (HTTP {resp.status})") if resp.status >= 400 else None,
        )
        page.on("pageerror", lambda exc: log.errors.append(str(exc.message if hasattr(exc, "message") else exc)))
        page.on("console", lambda msg: log.errors.append(msg.text) if msg.type == "error" else None)

        response = page.goto(base_url + path, wait_until="load", timeout=60_000)
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        _settle(page, log)
        return page, log

    yield _open
    for c in contexts:
        c.close()


def _settle(page, log: PageLog) -> None:
    """Wait until MathJax has typeset and the widgets have rendered."""
    page.wait_for_load_state("networkidle", timeout=60_000)
    if page.locator("script[src*='tex-chtml']").count():
        page.wait_for_function(
            "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
            timeout=60_000,
        )
        page.evaluate("() => window.MathJax.startup.promise.then(() => true)")
    if page.locator("script[type='application/vnd.jupyter.widget-state+json']").count():
        # embed-amd renders each widget view next to its <script> placeholder
        try:
            page.wait_for_function(
                """() => Array.from(document.querySelectorAll(
                          "script[type='application/vnd.jupyter.widget-view+json']"))
                       .every(s => s.parentElement && s.parentElement.querySelector('.jupyter-widgets'))""",
                timeout=30_000,
            )
        except PlaywrightTimeout:
            log.errors.append("(test) the widgets did not render within 30 s")
    page.wait_for_load_state("networkidle", timeout=60_000)
    page.wait_for_timeout(300)  # late console errors of the last scripts


@pytest.mark.parametrize("path", [EXPLORER_PAGE, SOLUTION_PAGE])
def test_every_declared_font_loads(open_page, path):
    """Every @font-face the page declares (theme, MathJax, widget manager) loads.

    Browsers fetch a font only when a glyph needs it, so a wrong font URL shows
    up in the page tests only on the pages and at the moments that happen to draw
    such a glyph. Loading every declared face makes the check deterministic."""
    page, log = open_page(path)
    faces = page.evaluate(
        """async () => {
             const out = [];
             for (const f of Array.from(document.fonts)) {
               try { await f.load(); } catch (e) { /* status tells */ }
               out.push([f.family, f.weight, f.style, f.status]);
             }
             return out;
           }"""
    )
    page.wait_for_load_state("networkidle", timeout=60_000)
    assert faces, f"{path}: declares no font face (stylesheets missing?)"
    broken = [f for f in faces if f[3] != "loaded"]
    assert not broken and not log.problems(), (broken, log.problems())


# ---------------------------------------------------------------------------
# Every page


def test_toc_lists_pages():
    assert PAGES and PAGES[0] == "book/index.html", PAGES
    assert set(EXPLORER_PAGES) <= set(PAGES), PAGES
    assert SOLUTION_PAGE in PAGES, PAGES


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly(open_page, path):
    page, log = open_page(path)
    problems = log.problems()
    if not page.locator("main h1, article h1").count():
        problems["no heading"] = [path]
    assert not problems, f"{path}: " + "; ".join(f"{k}: {v}" for k, v in problems.items())


@pytest.mark.parametrize("path", PAGES)
def test_formulas_render(open_page, site, path):
    html = (site / path).read_text(encoding="utf-8")
    has_math = bool(re.search(r'class="[^"]*\bmath\b', html))
    if path == "book/04-scores.html":
        assert has_math, "book/04-scores.html should contain formulas"
    if not has_math:
        return
    page, _ = open_page(path)
    assert page.locator("mjx-container").count() > 0, f"{path}: MathJax rendered no formula"
    assert page.locator("mjx-merror").count() == 0, (
        f"{path}: TeX errors: {page.locator('mjx-merror').all_inner_texts()}"
    )


@pytest.mark.parametrize("doc", NOTEBOOK_DOCS)
def test_notebook_has_colab_link(open_page, doc):
    expected = _colab_base() + f"{doc}.ipynb"
    page, _ = open_page(f"{doc}.html")
    hrefs = page.eval_on_selector_all("a[href*='colab.research.google.com']", "els => els.map(e => e.href)")
    assert expected in hrefs, f"{doc}: expected a Colab link {expected}, found {hrefs}"


# ---------------------------------------------------------------------------
# The explorers on the static pages

# The visible images under root, each named by a hash of its pixels: a static
# explorer's Image views show their frame through a new blob: URL every time they
# are created, so the URL does not say which frame is shown. "loading" while an
# image has not been decoded yet.
_VISIBLE_IMAGES_JS = """
root => Array.from(root.querySelectorAll('img'))
    .filter(img => { const r = img.getBoundingClientRect(); return r.width > 0 && r.height > 0; })
    .map(img => {
        if (!img.complete || !img.naturalWidth) return 'loading';
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const ctx = c.getContext('2d');
        ctx.drawImage(img, 0, 0);
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        let h = 2166136261;  // FNV-1a over every pixel
        for (let i = 0; i < d.length; i++) { h ^= d[i]; h = Math.imul(h, 16777619) >>> 0; }
        return c.width + 'x' + c.height + ':' + h.toString(16);
    })
"""

# The explorer around a control: its nearest ancestor that also holds an image.
_EXPLORER_OF_JS = """
el => { let n = el.parentElement;
        while (n && !n.querySelector('img')) n = n.parentElement;
        if (!n) return false;
        n.setAttribute('data-test-explorer', '1'); return true; }
"""


def _explorer_around(page, control):
    page.evaluate(
        "() => document.querySelectorAll('[data-test-explorer]').forEach(e => e.removeAttribute('data-test-explorer'))"
    )
    assert control.evaluate(_EXPLORER_OF_JS), "no figure next to the control"
    return page.locator("[data-test-explorer]").first


def _visible_images(explorer) -> list[str]:
    """Pixel hashes of the visible images, once all of them are decoded (up to 5 s)."""
    for _ in range(50):
        hashes = explorer.evaluate(_VISIBLE_IMAGES_JS)
        if "loading" not in hashes:
            return hashes
        explorer.page.wait_for_timeout(100)
    return hashes


def _wait_for_change(page, explorer, before, what):
    for _ in range(50):
        after = _visible_images(explorer)
        if after and "loading" not in after and after != before:
            return after
        page.wait_for_timeout(100)
    pytest.fail(f"the explorer's figure did not change after {what} (still {[s[:60] for s in before]})")


@pytest.mark.parametrize("explorer_page", EXPLORER_PAGES)
def test_explorer_changes_figure(open_page, explorer_page):
    """Every control of the page's explorer (Dropdowns and sliders) changes its figure."""
    page, log = open_page(explorer_page)
    name = Path(explorer_page).stem
    output = page.locator(".cell_output")
    selects = output.locator(".widget-dropdown select")  # ipywidgets 8: a <select>
    handles = output.locator(".noUi-handle")  # ipywidgets 8 sliders: noUiSlider, keyboard-operable
    assert selects.count() + handles.count(), f"{explorer_page}: no control rendered (widgets blank?)"
    first = selects.first if selects.count() else handles.first
    explorer = _explorer_around(page, first)
    explorer.scroll_into_view_if_needed()
    assert _visible_images(explorer), "the explorer shows no figure"
    explorer.screenshot(path=str(SHOTS / f"explorer-{name}.png"))

    for i in range(selects.count()):
        select = selects.nth(i)
        explorer = _explorer_around(page, select)
        before = _visible_images(explorer)
        options = select.evaluate("s => Array.from(s.options).map(o => o.value)")
        others = [o for o in options if o != select.input_value()]
        assert others, f"dropdown {i} has a single option {options}"
        select.select_option(others[0])
        assert _wait_for_change(page, explorer, before, f"choosing {others[0]!r} in dropdown {i}") != before

    for i in range(handles.count()):
        handle = handles.nth(i)
        explorer = _explorer_around(page, handle)
        explorer.scroll_into_view_if_needed()
        before = _visible_images(explorer)
        now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
        key = "ArrowLeft" if now is not None and now == top else "ArrowRight"
        handle.focus()
        handle.press(key)
        assert _wait_for_change(page, explorer, before, f"pressing {key} on slider {i}") != before
    explorer.screenshot(path=str(SHOTS / f"explorer-{name}-after.png"))

    assert not log.problems(), log.problems()


# Every control of the page, moved many times inside one JavaScript task (no
# waiting in between, as when a slider is dragged or a key is held down), then put
# back where it started, still without waiting. Returns the number of controls.
_BURST_JS = """
() => {
  const selects = Array.from(document.querySelectorAll('.cell_output .widget-dropdown select'));
  const handles = Array.from(document.querySelectorAll('.cell_output .noUi-handle'));
  const pick = (s, v) => { s.value = v; s.dispatchEvent(new Event('change', {bubbles: true})); };
  const key = (h, k) => h.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true, cancelable: true}));
  const at = h => Number(h.getAttribute('aria-valuenow'));
  const start = {selects: selects.map(s => s.value), handles: handles.map(at)};
  for (let round = 0; round < 3; round++) {
    selects.forEach(s => Array.from(s.options).forEach(o => pick(s, o.value)));
    handles.forEach(h => ['ArrowRight', 'ArrowRight', 'ArrowLeft', 'ArrowRight', 'ArrowLeft',
                          'ArrowLeft', 'ArrowLeft', 'ArrowRight'].forEach(k => key(h, k)));
  }
  selects.forEach((s, i) => pick(s, start.selects[i]));
  handles.forEach((h, i) => {
    for (let n = 0; n < 100 && at(h) !== start.handles[i]; n++) {
      key(h, at(h) < start.handles[i] ? 'ArrowRight' : 'ArrowLeft');
    }
  });
  return selects.length + handles.length;
}
"""


@pytest.mark.parametrize("explorer_page", EXPLORER_PAGES)
def test_explorer_survives_rapid_changes(open_page, explorer_page):
    """Moving every control many times without waiting raises no error (the static
    explorers' nested Stack widgets create and remove child views asynchronously:
    the race book/_ext/static_site.py guards) and ends on the frame it started from."""
    page, log = open_page(explorer_page)
    before = _visible_images(page.locator("body"))
    assert before and "loading" not in before, f"{explorer_page}: no figure rendered"
    for _ in range(3):
        assert page.evaluate(_BURST_JS), f"{explorer_page}: no control rendered (widgets blank?)"
        page.wait_for_timeout(20)
    after = before
    for _ in range(50):  # let the last views settle
        page.wait_for_timeout(100)
        after = page.locator("body").evaluate(_VISIBLE_IMAGES_JS)
        if after == before:
            break
    page.wait_for_timeout(300)  # late errors of the last updates
    assert not log.problems(), f"{explorer_page}: {log.problems()}"
    assert after == before, (
        f"{explorer_page}: every control is back at its start, but the figures differ "
        f"({len(before)} images before, {len(after)} after)"
    )


def test_solution_toggle(open_page):
    """An exercise's solution is hidden until the reader opens its toggle; the
    toggle's script and style come from the site itself (open_page fails on any
    request that leaves 127.0.0.1)."""
    page, log = open_page(SOLUTION_PAGE)
    solution = page.locator(".admonition.dropdown").filter(has_text="Solution").first
    assert solution.count(), f"{SOLUTION_PAGE}: no folded solution (:class: dropdown admonition)"
    body = solution.locator(":scope > :not(.admonition-title)").first
    solution.scroll_into_view_if_needed()
    assert body.is_hidden(), f"{SOLUTION_PAGE}: the solution is shown before its toggle is clicked"
    button = solution.locator(".toggle-button")
    assert button.count() == 1, f"{SOLUTION_PAGE}: the solution has no toggle button"
    assert button.get_attribute("aria-expanded") == "false"
    button.click()
    body.wait_for(state="visible", timeout=5_000)
    assert button.get_attribute("aria-expanded") == "true"
    button.click()
    body.wait_for(state="hidden", timeout=5_000)
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- the playground

PLAYGROUND_PAGE = "book/playground.html"


def _playground_examples(name: str) -> list[dict]:
    path = SITE / "playground-models" / name / "vocab.json"
    if not path.exists():
        pytest.fail(f"no {path}: the site build exports the playground's models (python -m attention export-web)")
    return json.loads(path.read_text(encoding="utf-8"))["examples"]


@pytest.mark.parametrize("model", ["dates", "hsk", "dates-transformer"])
def test_playground_translates_like_the_python_model(open_page, model):
    """Type a test sentence (a date, a Chinese sentence): the page's output is the Python model's
    greedy output, the map has one row per output token and one column per source token, and no
    request leaves the site."""
    page, log = open_page(PLAYGROUND_PAGE)
    root = page.locator("#playground")
    page.wait_for_function(
        "() => ['true', 'error'].includes(document.getElementById('playground').dataset.ready)", timeout=60_000
    )
    assert root.get_attribute("data-ready") == "true", page.locator(".pg-status").inner_text()
    print(f"playground ready {root.get_attribute('data-load-ms')} ms after its script started")
    page.select_option(".pg-model", model)
    parity = json.loads((SITE / "playground-models" / "manifest.json").read_text())["models"][model]["parity"]
    shown = page.locator(".pg-parity").inner_text()
    assert f"on {parity['sentences']} test sentences" in shown and f"{100 * parity['same_output']:.1f} %" in shown, (
        shown
    )
    for example in _playground_examples(model)[:3]:
        page.fill(".pg-input", example["text"])
        page.click(".pg-go")
        page.wait_for_function("() => document.querySelector('.pg-output').dataset.tokens", timeout=30_000)
        tokens = json.loads(page.locator(".pg-output").get_attribute("data-tokens"))
        assert tokens == example["output"], (example["text"], tokens, example["output"])
        assert page.locator(".pg-heatmap tbody tr").count() == len(tokens)
        assert page.locator(".pg-heatmap thead th").count() == len(example["tokens"])
    if model == "hsk":  # the survey's example first, written as the dictionary record's seed 0 writes it
        first = _playground_examples(model)[0]
        seed0 = next(
            r
            for r in results.load_result("dictionary")["metrics"]["runs"]
            if (r["variant"], r["seed"]) == ("HSK+CEDICT", 0)
        )
        assert first["text"] == "機器學習"
        page.locator(".pg-example").first.click()
        page.wait_for_function(
            "t => document.querySelector('.pg-output').dataset.tokens === t",
            arg=json.dumps(first["output"], separators=(",", ":"), ensure_ascii=False),
            timeout=30_000,
        )
        assert page.locator(".pg-output").inner_text().strip() == seed0["probes"]["機器學習"]["output"]
        assert page.locator(".pg-heatmap thead th").all_inner_texts() == list("機器學習")
    if model == "dates-transformer":  # every layer's and head's cross-attention, mean of the heads first
        assert page.locator(".pg-heads").is_visible()
        before = page.locator(".pg-map").inner_text()
        page.select_option(".pg-head", "0")
        assert page.locator(".pg-map").inner_text() != before
    else:
        assert not page.locator(".pg-heads").is_visible()
    page.locator(".pg-heatmap tbody tr").first.hover()
    assert page.locator(".pg-step").inner_text().startswith("step 1")
    page.fill(".pg-input", "   ")
    page.click(".pg-go")
    assert "first" in page.locator(".pg-status").inner_text()
    assert not log.problems(), log.problems()


@functools.lru_cache(maxsize=None)
def _python_model(name: str):
    from attention.book import webexport

    return webexport.playground_model(name)


def _first_edit_that_changes(name: str, example: dict, hook_at) -> tuple[int, int] | None:
    """The first (step, source position) whose all-the-weight-there edit changes the Python model's
    output on ``example``, or None."""
    import numpy as np

    from attention.book import webexport

    model, data = _python_model(name)
    ids, S = data.src_vocab.encode(example["tokens"]), len(example["tokens"])
    max_len = webexport.PLAYGROUND[name]["max_len"]
    for t in range(len(example["output"])):
        for pos in range(S):
            edit = {t: np.eye(S, dtype=np.float32)[pos]}
            if webexport.steer(model, ids, max_len, edit, hook_at)["ids"] != data.tgt_vocab.encode(example["output"]):
                return t, pos
    return None


def _steered_in_the_page(page) -> list[str]:
    page.wait_for_function("() => document.querySelector('.pg-steered').dataset.tokens", timeout=30_000)
    return json.loads(page.locator(".pg-steered").get_attribute("data-tokens"))


@pytest.mark.parametrize("model", ["dates", "hsk", "dates-transformer"])
def test_playground_steers_like_the_python_model(open_page, model):
    """Edit a step's attention in the page (all the weight on one source token, uniform, as the
    model had it, the sliders; for the Transformer every head of the last layer, then one head):
    the page's new output and its top 5 next tokens at the edited step are those of the Python
    model given the same weights through its hook (``webexport.steer``), the model's own output
    stays beside it, the page was ready in under 2 s, and no request leaves the site."""
    import numpy as np

    from attention.book import webexport

    page, log = open_page(PLAYGROUND_PAGE)
    root = page.locator("#playground")
    page.wait_for_function(
        "() => ['true', 'error'].includes(document.getElementById('playground').dataset.ready)", timeout=60_000
    )
    assert root.get_attribute("data-ready") == "true", page.locator(".pg-status").inner_text()
    assert int(root.get_attribute("data-load-ms")) < 2000, root.get_attribute("data-load-ms")
    page.select_option(".pg-model", model)
    python, data = _python_model(model)
    transformer = model == "dates-transformer"
    hook_at = (python.cfg.decoder_layers - 1, None) if transformer else None  # the page's default: every head
    examples = _playground_examples(model)
    found = next(((ex, e) for ex in examples[:3] if (e := _first_edit_that_changes(model, ex, hook_at))), None)
    assert found, f"no edit of one step changes {model}'s output on its first examples"
    example, (t, pos) = found
    ids, S = data.src_vocab.encode(example["tokens"]), len(example["tokens"])
    max_len = webexport.PLAYGROUND[model]["max_len"]

    def expected(weights, at=hook_at) -> tuple[list[str], list[str]]:
        ref = webexport.steer(python, ids, max_len, {t: np.asarray(weights, dtype=np.float32)}, at)
        top = np.argsort(-ref["probs"][t], kind="stable")[:5]
        return data.tgt_vocab.decode(ref["ids"]), [data.tgt_vocab.itos[i] for i in top]

    def shown_top(sel: str) -> list[str]:
        return [li.get_attribute("data-token") for li in page.locator(sel + " li").all()]

    page.fill(".pg-input", example["text"])
    page.click(".pg-go")
    page.wait_for_function("() => document.querySelector('.pg-output').dataset.tokens", timeout=30_000)
    assert json.loads(page.locator(".pg-output").get_attribute("data-tokens")) == example["output"]
    if transformer:
        assert page.locator(".pg-layer").input_value() == str(python.cfg.decoder_layers - 1)
        assert page.locator(".pg-head").input_value() == "mean"
    page.locator(".pg-map .pg-heatmap tbody tr").nth(t).click()
    assert page.locator(".pg-steer").is_visible()
    assert page.locator(".pg-target").all_inner_texts() == example["tokens"]
    page.locator(".pg-target").nth(pos).click()
    tokens, top = expected(np.eye(S)[pos])
    assert _steered_in_the_page(page) == tokens != example["output"], (example["text"], t, pos)
    assert shown_top(".pg-topk-new") == top
    assert json.loads(page.locator(".pg-output").get_attribute("data-tokens")) == example["output"]  # its own, beside
    assert len(shown_top(".pg-topk-own")) == 5 and shown_top(".pg-topk-own")[0] == example["output"][t]
    assert page.locator(".pg-steer-map .pg-heatmap tbody tr").count() == len(tokens)
    page.click(".pg-uniform")
    tokens, top = expected(np.full(S, 1 / S))
    assert _steered_in_the_page(page) == tokens and shown_top(".pg-topk-new") == top
    page.click(".pg-own")
    assert _steered_in_the_page(page) == example["output"]
    if model == "dates":  # drag: the sliders' values over their sum
        values = [300] + [0] * (S - 2) + [700] if S > 1 else [1000]
        sliders = page.locator(".pg-slider input")
        for i, v in enumerate(values):
            sliders.nth(i).evaluate("(el, v) => { el.value = String(v); }", v)
        sliders.nth(0).dispatch_event("change")  # what letting go of a slider sends
        tokens, top = expected(np.asarray(values, dtype=np.float64) / sum(values))
        assert _steered_in_the_page(page) == tokens and shown_top(".pg-topk-new") == top
    if transformer:  # one head of the last layer
        page.select_option(".pg-head", "1")
        page.locator(".pg-target").nth(pos).click()
        tokens, top = expected(np.eye(S)[pos], at=(python.cfg.decoder_layers - 1, 1))
        assert _steered_in_the_page(page) == tokens and shown_top(".pg-topk-new") == top
        assert "head 2" in page.locator(".pg-steer-step").inner_text()
    assert not log.problems(), log.problems()
