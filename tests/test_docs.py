"""CONTRIBUTING.md stays true: the code the book quotes exists and is listed, its sections exist.

* every ``literalinclude`` of ``book/*.md`` names a file that exists and an object (``:pyobject:``,
  ``Class.method`` resolved with ``ast``) or marker lines (``:start-at:`` ...) found in it;
* README's table of "The package" lists every module of the package, and nothing that is gone;
* the sections that docstrings of the package cite (``CONTRIBUTING.md``, "Section") exist.
"""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
PAGES = sorted(BOOK.glob("*.md"))

SECTIONS = [
    "Package conventions",
    "Adding a model",
    "Adding a task",
    "Adding a chapter",
    "Adding an explorer",
    "Names the book quotes",
    "Cached models",
    "Recorded results",
    "Data",
    "Tests and CI",
]

# A MyST directive fence: ```{literalinclude} path  or  :::{literalinclude} path (3+ marks).
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{literalinclude\}\s+(?P<path>\S+)\s*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*?)\s*$")
MARKERS = ("start-at", "start-after", "end-at", "end-before")
# ``CONTRIBUTING.md``, "Section"  or  ``CONTRIBUTING.md`` ("Section")
CITATION = re.compile(r'CONTRIBUTING\.md`*\s*(?:,|\()\s*"(?P<section>[^"]+)"')


def _unquote(value: str) -> str:
    """MyST reads directive options as YAML: a quoted value loses its quotes."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def literalincludes() -> list[dict]:
    """Every literalinclude of the book: page, line, file (repository-relative), options."""
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            match = FENCE.match(line.strip())
            if not match:
                continue
            options = {}
            for option in lines[i + 1 :]:
                opt = OPTION.match(option.strip())
                if not opt:
                    break
                options[opt["key"]] = _unquote(opt["value"])
            raw = match["path"]
            target = ROOT / raw.lstrip("/") if raw.startswith("/") else page.parent / raw
            found.append(
                {
                    "page": page.relative_to(ROOT).as_posix(),
                    "line": i + 1,
                    "raw": raw,
                    "path": target,
                    "options": options,
                }
            )
    return found


def quote_key(include: dict) -> tuple[str, str]:
    """``(file, object)``: the pair the table lists. The object is the ``:pyobject:``, or the
    first marker (``:start-at:`` / ``:start-after:``) of a quote cut by markers."""
    path = include["path"].resolve()
    try:
        file = path.relative_to(ROOT).as_posix()
    except ValueError:
        file = str(path)
    options = include["options"]
    name = options.get("pyobject") or options.get("start-at") or options.get("start-after") or "(whole file)"
    return file, name


def find_pyobject(tree: ast.Module, dotted: str) -> ast.AST | None:
    """The class or function ``dotted`` (``Class.method`` ...) defined in ``tree``, as Sphinx finds it."""
    body = tree.body
    node = None
    for part in dotted.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = getattr(node, "body", [])
    return node


def include_problem(include: dict) -> str | None:
    """Why Sphinx could not build this literalinclude, or None."""
    where = f"{include['page']}:{include['line']} ({include['raw']})"
    path = include["path"]
    if not path.is_file():
        return f"{where}: no file {path}"
    text = path.read_text(encoding="utf-8")
    options = include["options"]
    if "pyobject" in options:
        if find_pyobject(ast.parse(text), options["pyobject"]) is None:
            return f"{where}: no class or function {options['pyobject']!r} in {path.name}"
    lines = text.splitlines()
    start = 0
    for key in ("start-at", "start-after"):
        if key in options:
            hits = [n for n, line in enumerate(lines) if options[key] in line]
            if not hits:
                return f"{where}: :{key}: {options[key]!r} matches no line of {path.name}"
            start = hits[0]
    for key in ("end-at", "end-before"):
        if key in options and not any(options[key] in line for line in lines[start:]):
            return f"{where}: :{key}: {options[key]!r} matches no line of {path.name} after the start"
    if "lines" in options:
        numbers = [int(n) for n in re.findall(r"\d+", options["lines"])]
        if not numbers or max(numbers) > len(lines):
            return f"{where}: :lines: {options['lines']} is outside {path.name} ({len(lines)} lines)"
    return None


def contributing() -> str:
    assert CONTRIBUTING.is_file(), "CONTRIBUTING.md is missing"
    return CONTRIBUTING.read_text(encoding="utf-8")


def prose(text: str) -> str:
    """``text`` with the lines of fenced code blocks blanked (a ``# comment`` there is no heading)."""
    out, fence = [], None
    for line in text.splitlines():
        mark = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence is None and mark:
            fence = mark.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def headings(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", prose(text), re.M)]


def section(text: str, title: str) -> str:
    """The text of the section ``## title``, up to the next heading of the same or a higher level."""
    text = prose(text)
    match = re.search(rf"^(#+)\s+{re.escape(title)}\s*$", text, re.M)
    assert match, f"CONTRIBUTING.md has no section {title!r}"
    level = len(match.group(1))
    end = re.compile(rf"^#{{1,{level}}}\s", re.M).search(text, match.end())
    return text[match.end() : end.start() if end else len(text)]


def quoted() -> dict[tuple[str, str], set[str]]:
    """(file, object) -> the book pages that quote it."""
    out: dict[tuple[str, str], set[str]] = {}
    for include in literalincludes():
        out.setdefault(quote_key(include), set()).add(include["page"])
    return out


# --- the book's quotes -------------------------------------------------------------------------


def test_the_book_quotes_code():
    assert PAGES and literalincludes(), "no literalinclude found in book/*.md: has the directive syntax changed?"


@pytest.mark.parametrize("include", literalincludes(), ids=lambda i: f"{i['page']}:{i['line']}")
def test_every_quote_names_code_that_exists(include):
    problem = include_problem(include)
    assert problem is None, problem + " -- renaming quoted code breaks the book build (jupyter-book -W)"


# --- sections ----------------------------------------------------------------------------------


def test_contributing_has_every_section():
    present = headings(contributing())
    missing = [s for s in SECTIONS if s not in present]
    assert not missing, f"CONTRIBUTING.md lacks the sections {missing} (has {present})"


def citations() -> list[tuple[str, str]]:
    """(file, section) of every ``CONTRIBUTING.md, "Section"`` citation in the package."""
    out = []
    for path in sorted((ROOT / "attention").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out += [(path.relative_to(ROOT).as_posix(), m["section"]) for m in CITATION.finditer(text)]
    return out


def test_the_citation_pattern_finds_the_packages_citations():
    mentions = sum(p.read_text(encoding="utf-8").count("CONTRIBUTING.md") for p in (ROOT / "attention").rglob("*.py"))
    assert mentions == 0 or citations(), "the package mentions CONTRIBUTING.md but no citation was parsed"


def test_docstrings_cite_existing_sections():
    present = set(headings(contributing()))
    broken = [(path, name) for path, name in citations() if name not in present]
    assert not broken, f"these cite sections CONTRIBUTING.md does not have: {broken}"


def test_the_readmes_module_table_lists_every_module_of_the_package():
    """Every top-level module, every subpackage and every module of attention/studies and
    attention/book appears in README's table of "The package" (a row may list several modules of
    one folder by their file names after the first path)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## The package") :]
    section = section[: section.index("\n## ", 5)]
    rows = [line for line in section.splitlines() if line.startswith("| `attention/")]
    listed = set()
    for row in rows:
        cell = row.split("|")[1]
        paths = re.findall(r"`(attention/[\w/.]*)`", cell)
        folder = paths[0].rsplit("/", 1)[0] if paths else ""
        listed |= set(paths) | {f"{folder}/{name}" for name in re.findall(r"`(\w+\.py)`", cell)}
    package = ROOT / "attention"
    expected = {f"attention/{p.name}" for p in package.glob("*.py")}
    expected |= {
        f"attention/{p.name}/"
        for p in package.iterdir()
        if (p / "__init__.py").exists() and p.name not in ("studies", "book")
    }
    expected |= {f"attention/studies/{p.name}" for p in (package / "studies").glob("*.py") if p.name != "__init__.py"}
    expected |= {f"attention/book/{p.name}" for p in (package / "book").glob("*.py") if p.name != "__init__.py"}
    expected |= {f"attention/book/{p.name}/" for p in (package / "book").iterdir() if (p / "__init__.py").exists()}
    expected -= {"attention/__init__.py"}
    missing = sorted(expected - listed)
    assert not missing, f"README's module table lacks {missing}"
    stale = sorted(p for p in listed if not (ROOT / p).exists())
    assert not stale, f"README's module table names what does not exist: {stale}"


def test_the_packages_docstrings_cite_files_that_exist():
    """A docstring that names a file of the repository (``book/...md``, ``attention/...py``,
    ``notebooks/...ipynb``, ``scripts/...``; ``chNN`` for any chapter) names one that is there."""
    cited = re.compile(r"``((?:book|attention|notebooks|scripts|tests)/[\w./-]+\.(?:md|py|ipynb|sh|json|tsv))``")
    missing = []
    for path in sorted((ROOT / "attention").rglob("*.py")):
        for name in cited.findall(path.read_text(encoding="utf-8")):
            pattern = name.replace("NN", "[0-9][0-9]")  # chNN.py: one per chapter
            if not any(ROOT.glob(pattern)):
                missing.append(f"{path.relative_to(ROOT)} cites {name}")
    assert not missing, "\n".join(missing)


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # every control character but tab and newline


def _outside_fences(text: str):
    """(line number, line) of the lines of ``text`` that are not inside a ``` fence."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


@pytest.mark.parametrize("page", sorted(BOOK.glob("*.md")), ids=lambda p: p.name)
def test_pages_hold_no_stray_control_characters(page):
    """A formula typed through a shell or a Python string can lose a backslash: ``\\text`` becomes a
    TAB and ``ext``, ``\\b`` a backspace. Only a fenced block (bAbI's tab-separated lines) may hold
    a tab; no page holds any other control character."""
    text = page.read_text(encoding="utf-8")
    bad = [(n, repr(line[:60])) for n, line in enumerate(text.splitlines(), start=1) if CONTROL.search(line)]
    bad += [(n, repr(line[:60])) for n, line in _outside_fences(text) if "\t" in line]
    assert not bad, f"{page.name}: control characters at {bad}"


def test_the_control_character_check_finds_a_lost_backslash():
    lost = "$$\n\\mathcal{L} = \\mathrm{CE}(\text{logits})\n$$\n```text\n3 Where?\tbathroom\n```\n"
    assert [n for n, line in _outside_fences(lost) if "\t" in line] == [2]
    assert CONTROL.search("\\mathrm{x}\b") and not CONTROL.search("a\tb")


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_text_holds_no_stray_control_characters(notebook):
    """The same for the notebooks' Markdown cells (their formulas render on the site too)."""

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    bad = [
        (i, repr(line[:60]))
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown"
        for _, line in _outside_fences("".join(cell["source"]))
        if CONTROL.search(line) or "\t" in line
    ]
    assert not bad, f"{notebook.name}: control characters in cells {bad}"
