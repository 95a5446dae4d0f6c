#!/usr/bin/env python3
"""Copy the browser assets the website needs out of node_modules/ into _vendor/.

The static site must not load anything from a CDN. Jupyter Book copies _vendor/
into the site root (``html_extra_path`` in _config.yml), giving:

    vendor/require.js            RequireJS (loads the widget manager)
    vendor/embed-amd.js          @jupyter-widgets/html-manager: renders widget state
    vendor/<hash>.woff2 ...      fonts embed-amd.js loads next to itself
    mathjax/tex-chtml.js         MathJax 3 (TeX input, CommonHTML output) and the
    mathjax/...                  files it loads on demand (fonts, TeX extensions,
                                 menu, accessibility)
    vendor/onnxruntime/          onnxruntime-web's WebAssembly backend (the playground)

Run ``npm ci --no-audit --no-fund`` first (package.json / package-lock.json).
Usage: python scripts/vendor_assets.py [--root REPO] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# package -> (version pinned in package.json, files/dirs relative to the package,
#             destination relative to _vendor/)
MATHJAX_FILES = [
    "es5/tex-chtml.js",
    "es5/output/chtml/fonts/woff-v2",  # the CHTML fonts (loaded via CSS)
    "es5/input/tex/extensions",  # [tex]/... packages, autoloaded on demand
    "es5/input/mml.js",  # needed by a11y/semantic-enrich and [mml]/mml3
    "es5/input/mml",
    "es5/ui",  # menu, lazy, safe
    "es5/a11y",  # assistive-mml (menu default), explorer, ...
    "es5/sre",  # speech-rule-engine maps used by a11y/sre
]


# onnxruntime-web: the plain wasm build (ort.wasm.min.js loads the .mjs, which loads the .wasm)
ORT_FILES = ["ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]


class VendorError(RuntimeError):
    pass


def _package_dir(node_modules: Path, name: str) -> Path:
    pkg = node_modules / name
    if not (pkg / "package.json").is_file():
        raise VendorError(
            f"{pkg} is missing. Install the pinned front-end packages first:\n"
            f"    npm ci --no-audit --no-fund\n"
            f"(from {node_modules.parent}, which holds package.json and package-lock.json)"
        )
    return pkg


def _check_version(pkg: Path, wanted: str) -> None:
    have = json.loads((pkg / "package.json").read_text())["version"]
    if have != wanted:
        raise VendorError(f"{pkg.name} {have} is installed but package.json pins {wanted}: run npm ci")


def _copy(src: Path, dst: Path) -> int:
    """Copy a file or a directory tree; return the number of files copied."""
    if not src.exists():
        raise VendorError(f"expected file {src} is missing (corrupt node_modules? run npm ci)")
    if src.is_dir():
        n = 0
        for f in sorted(src.rglob("*")):
            if f.is_file() and not f.name.endswith(".map"):
                n += _copy(f, dst / f.relative_to(src))
        return n
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return 1


def vendor(root: Path, out: Path) -> dict[str, int]:
    node_modules = root / "node_modules"
    if not node_modules.is_dir():
        raise VendorError(f"{node_modules} does not exist. Run this first, in {root}:\n    npm ci --no-audit --no-fund")
    pins = json.loads((root / "package.json").read_text())["dependencies"]

    staging = out.with_name(out.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    counts: dict[str, int] = {}

    # RequireJS
    pkg = _package_dir(node_modules, "requirejs")
    _check_version(pkg, pins["requirejs"])
    counts["requirejs"] = _copy(pkg / "require.js", staging / "vendor" / "require.js")

    # ipywidgets HTML manager (AMD build) and the asset files it loads relative to
    # its own URL (webpack public path = folder of embed-amd.js): fonts.
    pkg = _package_dir(node_modules, "@jupyter-widgets/html-manager")
    _check_version(pkg, pins["@jupyter-widgets/html-manager"])
    dist = pkg / "dist"
    embed = dist / "embed-amd.js"
    n = _copy(embed, staging / "vendor" / "embed-amd.js")
    assets = sorted(set(re.findall(r'\.p\+"([0-9a-f]{20}\.[a-z0-9]+)"', embed.read_text())))
    if not assets:
        raise VendorError(f"found no asset references in {embed}; unexpected html-manager build")
    for name in assets:
        n += _copy(dist / name, staging / "vendor" / name)
    n += _copy(pkg / "LICENSE", staging / "vendor" / "LICENSE.html-manager")
    if (dist / "embed.js.LICENSE.txt").is_file():
        n += _copy(dist / "embed.js.LICENSE.txt", staging / "vendor" / "embed-amd.js.LICENSE.txt")
    counts["@jupyter-widgets/html-manager"] = n

    # MathJax 3
    pkg = _package_dir(node_modules, "mathjax")
    _check_version(pkg, pins["mathjax"])
    n = 0
    for rel in MATHJAX_FILES:
        n += _copy(pkg / rel, staging / "mathjax" / Path(rel).relative_to("es5"))
    n += _copy(pkg / "LICENSE", staging / "mathjax" / "LICENSE")
    counts["mathjax"] = n

    # onnxruntime-web, the WebAssembly backend only (the playground's models run on one thread:
    # no cross-origin isolation needed): the loader, its module and its wasm binary.
    pkg = _package_dir(node_modules, "onnxruntime-web")
    _check_version(pkg, pins["onnxruntime-web"])
    n = 0
    for name in ORT_FILES:
        n += _copy(pkg / "dist" / name, staging / "vendor" / "onnxruntime" / name)
    n += _copy(pkg / "package.json", staging / "vendor" / "onnxruntime" / "package.json")  # MIT, names the release
    counts["onnxruntime-web"] = n

    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="repository root (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: ROOT/_vendor)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    out = (args.out or root / "_vendor").resolve()
    try:
        counts = vendor(root, out)
    except VendorError as e:
        print(f"vendor_assets: error: {e}", file=sys.stderr)
        return 1
    total = sum(counts.values())
    print(
        f"vendor_assets: copied {total} files into {out} "
        + "("
        + ", ".join(f"{k}: {v}" for k, v in counts.items())
        + ")"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
