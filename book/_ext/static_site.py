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
  it,
  - the asset path of the widget manager: it loads its fonts relative to its
    RequireJS module id, i.e. from ``<page folder>/@jupyter-widgets/html-manager/dist/``
    (404); a RequireJS ``paths`` config and ``__jupyter_widgets_assets_path__``
    point it at the site's ``vendor/`` folder, where scripts/vendor_assets.py puts them.
  - a MathJax 2 ``MathJax.Hub.Queue`` shim: the widget manager typesets widget
    labels with the MathJax 2 API (``MathJax.Hub.Queue(["Typeset", ...])``) but
    the site uses MathJax 3, which has no ``Hub``: every widget label threw
    "Cannot read properties of undefined (reading 'Queue')". The shim maps it to
    MathJax 3's ``typesetPromise``.
  and one right behind it, once its modules are defined:
  - a guard for the explorers' ``Stack`` widgets (ipywidgets 8): a Stack renders
    only its selected child, so every change of ``selected_index`` removes the old
    child view and creates a new one, asynchronously. When a control moves again
    before that has settled (a slider dragged or keys held down), two races in
    @jupyter-widgets/base and /controls threw:
    "Cannot read properties of null (reading 'processLuminoMessage')" -- the Stack
    posts a resize message to each new child once it is created, and when that
    child was already removed by the next change, the message is delivered to a
    disposed Lumino widget whose ``_view`` is null; and "Could not add child view
    to box" -- a nested Stack removed while its own child was still being created
    then inserts that child into its disposed panel. The guard drops messages to
    disposed widgets and lets a disposed panel dispose a late child instead of
    throwing. The frame finally shown was always right; only the errors are gone.
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
# ``require`` object read by require.js when it loads) maps every module id that
# embed-amd.js defines (base, controls, html-manager, html-manager/dist/...) into
# vendor/; __jupyter_widgets_assets_path__ covers the bundles that read it.
ASSETS_PATH_JS = r"""(function () {
  var v = new URL((document.documentElement.dataset.content_root || './') + 'vendor/',
                  document.baseURI).href;
  window.__jupyter_widgets_assets_path__ = v;
  var paths = {'@jupyter-widgets/html-manager/dist': v.replace(/\/$/, '')};
  ['base', 'controls', 'output', 'html-manager'].forEach(function (m) { paths['@jupyter-widgets/' + m] = v + m; });
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


# Runs right after vendor/embed-amd.js (which defines the AMD module
# @jupyter-widgets/base): patches its Lumino widget classes; the methods are looked
# up at call time, so views created before or after this are all covered.
STACK_RACE_GUARD_JS = """(function () {
  if (typeof window.require !== 'function') { return; }
  window.require(['@jupyter-widgets/base'], function (base) {
    // 1. A message posted to a widget that was disposed before the message loop
    //    delivered it: drop it (the stock processMessage reads this._view, now null).
    [base.JupyterLuminoWidget, base.JupyterLuminoPanelWidget].forEach(function (W) {
      var process = W && W.prototype.processMessage;
      if (!process || process.attentionGuard) { return; }
      var guarded = function (msg) {
        if (this.isDisposed || !this._view) { return; }
        return process.call(this, msg);
      };
      guarded.attentionGuard = true;
      W.prototype.processMessage = guarded;
    });
    // 2. A child view that finishes rendering after its box was removed: a disposed
    //    panel has no children and disposes a widget added to it, which removes
    //    the late view (the stock code throws "Could not add child view to box").
    var P = base.JupyterLuminoPanelWidget && base.JupyterLuminoPanelWidget.prototype;
    if (!P || P.attentionGuard) { return; }
    P.attentionGuard = true;
    var widgets = null;
    for (var o = Object.getPrototypeOf(P); o && !widgets; o = Object.getPrototypeOf(o)) {
      widgets = Object.getOwnPropertyDescriptor(o, 'widgets') || null;
    }
    if (widgets && widgets.get) {
      Object.defineProperty(P, 'widgets', {
        configurable: true,
        get: function () { return this.isDisposed ? [] : widgets.get.call(this); }
      });
    }
    ['addWidget', 'insertWidget'].forEach(function (name) {
      var add = P[name];
      if (typeof add !== 'function') { return; }
      P[name] = function () {
        if (this.isDisposed) {
          var late = arguments[arguments.length - 1];
          if (late && typeof late.dispose === 'function') { late.dispose(); }
          return;
        }
        return add.apply(this, arguments);
      };
    });
  });
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

    manager = next((js for js in out if is_manager(js)), None)
    if manager is not None:
        # Inline <script> objects of the same type Sphinx uses; created through
        # add_js_file so no private class is imported, then moved in place.
        # Sphinx sorts the scripts by priority (a stable sort) after this event:
        # the guard takes the manager's priority and the place right behind it.
        before = len(app.builder._js_files)
        app.add_js_file(None, body=ASSETS_PATH_JS, priority=400)
        app.add_js_file(None, body=MATHJAX2_HUB_SHIM_JS, priority=400)
        app.add_js_file(None, body=STACK_RACE_GUARD_JS, priority=getattr(manager, "priority", 500))
        *extra, guard = app.builder._js_files[before:]
        del app.builder._js_files[before:]
        out = extra + out
        out.insert(out.index(manager) + 1, guard)  # needs the modules embed-amd.js defines
    context["script_files"] = out


def setup(app):
    os.environ["ATTENTION_BOOK_STATIC"] = "1"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # Late priority: after myst-nb (500) has added the page's widget scripts.
    app.connect("html-page-context", _page_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
