"""Local Sphinx extension for the static website build of the book.

* Marks the build as the static-site build: ``ATTENTION_BOOK_STATIC=1`` is set in
  the environment of the Sphinx process, so every notebook kernel that the build
  launches inherits it (the explorers then embed precomputed frames, because a
  static page has no kernel).
* Keeps matplotlib on the non-interactive inline backend in those kernels.
* Removes repeated <script> entries from every page. sphinx-thebe registers its
  inline configuration script (``const THEBE_JS_URL = ...``) from an
  ``env-before-read-docs`` handler, which runs more than once in a Jupyter Book
  build, so the script landed twice on every page and the second copy threw
  "Identifier 'THEBE_JS_URL' has already been declared".
* On pages with widgets (the vendored ``vendor/embed-amd.js`` of
  @jupyter-widgets/html-manager 1.0.6), adds two small inline scripts in front of
  it:
  - the asset path of the widget manager: it loads its fonts relative to its
    RequireJS module id, i.e. from ``<page folder>/@jupyter-widgets/html-manager/dist/``
    (404); a RequireJS ``paths`` config and ``__jupyter_widgets_assets_path__``
    point it at the site's ``vendor/`` folder, where scripts/vendor_assets.py puts them.
  - a MathJax 2 ``MathJax.Hub.Queue`` shim: the widget manager typesets widget
    labels with the MathJax 2 API (``MathJax.Hub.Queue(["Typeset", ...])``) but
    the site uses MathJax 3, which has no ``Hub``: every widget label threw
    "Cannot read properties of undefined (reading 'Queue')". The shim maps it to
    MathJax 3's ``typesetPromise``.
"""

from __future__ import annotations

import os

os.environ["ATTENTION_BOOK_STATIC"] = "1"
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")

WIDGET_MANAGER = "vendor/embed-amd.js"

# Where the widget manager's fonts are: <site root>/vendor/ (content_root is the
# relative path from the page to the site root, set by Sphinx on <html>).
# embed-amd.js computes the URL of its fonts from the RequireJS URL of its modules
# (by default <page folder>/@jupyter-widgets/...): a RequireJS config (a global
# ``require`` object read by require.js when it loads) maps those module ids into
# vendor/; __jupyter_widgets_assets_path__ covers the bundles that read it.
ASSETS_PATH_JS = """(function () {
  var v = new URL((document.documentElement.dataset.content_root || './') + 'vendor/',
                  document.baseURI).href;
  window.__jupyter_widgets_assets_path__ = v;
  var paths = {'@jupyter-widgets/html-manager/dist': v.replace(/\/$/, '')};
  ['base', 'controls', 'output'].forEach(function (m) { paths['@jupyter-widgets/' + m] = v + m; });
  if (typeof window.require === 'undefined') { window.require = {paths: paths}; }
})();"""

# MathJax 2 API used by @jupyter-widgets/base's typeset(), on top of MathJax 3.
# window.MathJax is replaced twice (the config object, then MathJax 3 itself
# when it loads), so a property setter gives every new value the Hub.
MATHJAX2_HUB_SHIM_JS = """(function () {
  function typeset(el, tries) {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise && mj.typesetPromise) {
      mj.startup.promise = mj.startup.promise
        .then(function () { return mj.typesetPromise(el ? [el] : undefined); })
        .catch(function (err) { console.warn('MathJax typeset of a widget failed', err); });
    } else if ((tries || 0) < 100) {
      setTimeout(function () { typeset(el, (tries || 0) + 1); }, 100);
    }
  }
  var hub = {
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var job = arguments[i];
        if (Array.isArray(job) && job[0] === 'Typeset') { typeset(job[2]); }
        else if (typeof job === 'function') { job(); }
      }
    }
  };
  function withHub(v) {
    if (v && typeof v === 'object' && !v.Hub) {
      try { Object.defineProperty(v, 'Hub', { value: hub, enumerable: false, configurable: true }); }
      catch (e) { /* frozen object: leave it */ }
    }
    return v;
  }
  var current = withHub(window.MathJax);
  try {
    Object.defineProperty(window, 'MathJax', {
      configurable: true, enumerable: true,
      get: function () { return current; },
      set: function (v) { current = withHub(v); }
    });
  } catch (e) { /* already non-configurable: nothing to do */ }
})();"""


def _script_key(js):
    if not hasattr(js, "attributes"):  # old-style plain string entry
        return ("str", str(js))
    # The same inline script is registered once with filename None and once with ''.
    return (
        os.fspath(js.filename or ""),
        tuple(sorted((k, str(v)) for k, v in js.attributes.items())),
    )


def _page_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    out = []
    seen = set()
    for js in scripts:
        key = _script_key(js)
        if key in seen:
            continue
        seen.add(key)
        out.append(js)

    def is_manager(js):
        return os.fspath(getattr(js, "filename", None) or "").endswith(WIDGET_MANAGER)

    if any(is_manager(js) for js in out):
        # Inline <script> objects of the same type Sphinx uses; created through
        # add_js_file so no private class is imported, then moved in place.
        before = len(app.builder._js_files)
        app.add_js_file(None, body=ASSETS_PATH_JS, priority=400)
        app.add_js_file(None, body=MATHJAX2_HUB_SHIM_JS, priority=400)
        extra = app.builder._js_files[before:]
        del app.builder._js_files[before:]
        out = extra + out
    context["script_files"] = out


def setup(app):
    os.environ["ATTENTION_BOOK_STATIC"] = "1"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # Late priority: after myst-nb (500) has added the page's widget scripts.
    app.connect("html-page-context", _page_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
