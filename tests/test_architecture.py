"""The package's seams: model registry, checkpoints, tasks, the cache key, the results registry,
the command line and the import graph (CONTRIBUTING.md)."""

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from attention import experiments as ex
from attention import results
from attention.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attention.data import Vocab
from attention.layers import Attention
from attention.models import (
    MODELS,
    ClassifierOutput,
    LuongConfig,
    LuongSeq2Seq,
    Seq2Seq,
    Seq2SeqConfig,
    build,
    model_name,
    register_model,
)
from attention.provenance import code_fingerprint, normalised_source
from attention.scores import SCORES, is_content_based
from attention.tasks import ClassificationData, Example
from attention.train import History

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attention"


# --- a model family added the way CONTRIBUTING.md says: its file (here), the registry, its tests ---


@dataclasses.dataclass
class PoolingConfig:
    vocab: int
    classes: int
    dim: int = 16
    score: str = "scaled_dot"


@register_model("test-attention-pooling")
class AttentionPooling(nn.Module):
    """Embeddings, one learned query attending over the tokens, a linear classifier."""

    config_class = PoolingConfig

    def __init__(self, cfg: PoolingConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim, padding_idx=0)
        self.query = nn.Parameter(torch.randn(1, 1, cfg.dim))
        self.attend = Attention(cfg.score, query_dim=cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.classes)

    def forward(self, tokens, lengths) -> ClassifierOutput:
        x = self.embed(tokens)  # (B, S, d)
        padding = torch.arange(tokens.shape[1], device=tokens.device)[None] >= lengths[:, None]
        pooled, weights = self.attend(self.query.expand(len(tokens), 1, -1), x, key_padding_mask=padding)
        return ClassifierOutput(self.out(pooled[:, 0]), {"tokens": weights[:, 0]})  # (B, C), (B, S)


def toy_classification(n=300, seed=0) -> ClassificationData:
    """Label 1 when the sequence holds the token "x": attention must find it."""
    g = torch.Generator().manual_seed(seed)
    letters = list("abcdefgh")
    examples = []
    for i in range(n):
        length = int(torch.randint(3, 9, (1,), generator=g))
        tokens = [letters[int(j)] for j in torch.randint(0, len(letters), (length,), generator=g)]
        label = i % 2
        if label:
            tokens[int(torch.randint(0, length, (1,), generator=g))] = "x"
        examples.append(Example(tuple(tokens), label))
    vocab = Vocab.build([e.tokens for e in examples])
    return ClassificationData(
        "toy-contains-x", examples[:200], examples[200:250], examples[250:], vocab, ["no x", "x"], seed
    )


# --- registry ---------------------------------------------------------------------------------


def test_every_model_family_is_registered_with_a_dataclass_config():
    assert MODELS["seq2seq"] is Seq2Seq and MODELS["luong"] is LuongSeq2Seq
    for name, cls in MODELS.items():
        assert dataclasses.is_dataclass(cls.config_class) and cls.registry_name == name
    model = build("luong", {"src_vocab": 9, "tgt_vocab": 7, "hidden_dim": 8, "embed_dim": 8})
    assert isinstance(model, LuongSeq2Seq) and model_name(model) == "luong"
    with pytest.raises(KeyError, match="no model registered as 'no-such-model'"):
        build("no-such-model", {})
    with pytest.raises(TypeError, match="takes a LuongConfig, got Seq2SeqConfig"):
        build("luong", Seq2SeqConfig(5, 5))
    with pytest.raises(ValueError, match=r"has no field\(s\) \['heads'\]"):
        build("seq2seq", {"src_vocab": 5, "tgt_vocab": 5, "heads": 4})
    with pytest.raises(TypeError, match="is not a registered model"):
        model_name(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="is taken by Seq2Seq"):
        register_model("seq2seq")(AttentionPooling)


def test_luong_builds_through_the_shared_constructor():
    """Luong's model reuses RNNEncoderDecoder's construction (no skipped __init__, no copy)."""
    source = (PACKAGE / "models" / "luong.py").read_text()
    assert "nn.Module.__init__" not in source and "Encoder(" not in source and "nn.Embedding" not in source
    cfg = dict(src_vocab=11, tgt_vocab=13, embed_dim=16, hidden_dim=8, dropout=0.0)
    tied = LuongSeq2Seq(LuongConfig(**cfg, tie_embeddings=True))  # decoder size 16 == embed_dim
    assert tied.output.weight is tied.tgt_embed.weight  # tie_embeddings is honoured, not ignored
    with pytest.raises(ValueError, match="tie_embeddings needs"):
        LuongSeq2Seq(LuongConfig(**(cfg | {"hidden_dim": 16}), tie_embeddings=True))
    assert Seq2Seq(Seq2SeqConfig(**cfg, tie_embeddings=True)).output.weight is not None


def test_score_facts_come_from_the_score_classes():
    assert [n for n in SCORES if not is_content_based(n)] == ["location"]
    from attention.studies.ablation import SCORE_NAMES

    assert sorted(SCORE_NAMES) == sorted(SCORES)
    with pytest.raises(ValueError, match="local attention needs a content-based score"):
        LuongSeq2Seq(LuongConfig(5, 5, attention="location", local="m"))
    with pytest.raises(ValueError, match="unknown score 'nope'"):
        is_content_based("nope")


# --- checkpoints ------------------------------------------------------------------------------


def small_seq2seq():
    torch.manual_seed(0)
    return Seq2Seq(Seq2SeqConfig(src_vocab=9, tgt_vocab=7, embed_dim=8, hidden_dim=8))


def test_checkpoint_extras_round_trip_under_weights_only(tmp_path):
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "貓", "cat"])
    history = History(epochs=[{"epoch": 1, "valid_loss": 2.5}], best_epoch=1, seconds=3.0, stopped="done")
    extras = dict(
        vocab=vocab,
        history=history,
        vocabs=[vocab, vocab],
        table={"a": (1, 2.5, None)},
        tensor=torch.arange(3),
        note="plain",
    )
    save_checkpoint(tmp_path / "m.pt", small_seq2seq(), **extras)
    model, extra = load_checkpoint(tmp_path / "m.pt")
    assert isinstance(model, Seq2Seq) and set(extra) == set(extras)
    assert isinstance(extra["vocab"], Vocab) and extra["vocab"].itos == vocab.itos
    assert extra["history"] == history and [v.itos for v in extra["vocabs"]] == [vocab.itos] * 2
    assert extra["table"] == {"a": (1, 2.5, None)} and torch.equal(extra["tensor"], torch.arange(3))
    assert extra["note"] == "plain"


def test_checkpoint_refuses_extras_it_could_not_load_back(tmp_path):
    with pytest.raises(TypeError, match=r"extra thing is a PosixPath .* cannot keep"):
        save_checkpoint(tmp_path / "m.pt", small_seq2seq(), thing=tmp_path)
    with pytest.raises(TypeError, match=r"extra d\['k'\] is a object"):
        save_checkpoint(tmp_path / "m.pt", small_seq2seq(), d={"k": object()})
    assert not (tmp_path / "m.pt").exists()
    with pytest.raises(TypeError, match="is not a registered model"):
        save_checkpoint(tmp_path / "m.pt", nn.Linear(2, 2))


def test_wrong_files_get_clear_errors(tmp_path):
    path = tmp_path / "x.pt"
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(path)
    path.write_text("hello, I am a text file\n")
    with pytest.raises(CheckpointError, match=r"x\.pt is not a checkpoint of this package: torch.load cannot read it"):
        load_checkpoint(path)
    path.write_bytes(os.urandom(4096))
    with pytest.raises(CheckpointError, match="is not a checkpoint of this package"):
        load_checkpoint(path)
    torch.save(small_seq2seq().state_dict(), path)
    with pytest.raises(CheckpointError, match=r"is a bare state_dict \(\d+ tensors, e.g. 'encoder.embed.weight'\)"):
        load_checkpoint(path)
    torch.save({"config": {}, "state_dict": {}, "extra": {}}, path)  # an older, nameless format
    with pytest.raises(CheckpointError, match="not a checkpoint .*no format tag"):
        load_checkpoint(path)
    torch.save([1, 2, 3], path)
    with pytest.raises(CheckpointError, match="holds a list, not a checkpoint"):
        load_checkpoint(path)
    save_checkpoint(path, small_seq2seq())
    with pytest.raises(CheckpointError, match=r"holds a 'seq2seq' model \(Seq2Seq\), expected 'luong'"):
        load_checkpoint(path, expect="luong")
    with pytest.raises(CheckpointError, match="expected 'luong'"):
        load_checkpoint(path, expect=LuongSeq2Seq)
    blob = torch.load(path, weights_only=True)
    blob["model"] = "luong"  # the weights of one model under the name of another
    torch.save(blob, path)
    with pytest.raises(CheckpointError, match="its weights do not fit a LuongSeq2Seq"):
        load_checkpoint(path)
    blob["model"] = "no-such-model"
    torch.save(blob, path)
    with pytest.raises(CheckpointError, match="registered as 'no-such-model', which this package does not have"):
        load_checkpoint(path)


# --- tasks, fit, the cache --------------------------------------------------------------------


def test_fit_and_evaluate_take_any_registered_model_and_task(tmp_path):
    data = toy_classification()
    torch.manual_seed(0)
    model = AttentionPooling(PoolingConfig(len(data.vocab), 2))
    before = ex.evaluate(model, data)["accuracy"]
    seen = []
    history = ex.fit(model, data, epochs=12, lr=2e-2, progress=False, on_epoch=lambda r, m: seen.append(r["epoch"]))
    model.train()
    report = ex.evaluate(model, data)
    assert model.training, "evaluate leaves the model in the mode it found it in"
    assert seen == [e["epoch"] for e in history.epochs]
    assert report["accuracy"] >= 0.9 > before + 0.2, (before, report["accuracy"])
    weights = report["attention"][1]["tokens"]  # example 251 holds an "x": attention finds it
    example = data.test[1]
    assert example.label == 1 and example.tokens[int(weights.argmax())] == "x"
    # and the generic cache stores and reloads it
    torch.manual_seed(0)
    fresh = AttentionPooling(PoolingConfig(len(data.vocab), 2))
    trained, h = ex.fit_cached(fresh, data, cache_dir=tmp_path, epochs=2, progress=False)
    again, h2 = ex.fit_cached(
        AttentionPooling(PoolingConfig(len(data.vocab), 2)), data, cache_dir=tmp_path, epochs=2, progress=False
    )
    assert h is not None and h2 is None and isinstance(again, AttentionPooling)
    assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), again.state_dict().values()))


def test_a_cached_luong_model_loads_back(tmp_path):
    data = ex.dates_data(n=120)
    model = ex.build_model(data, attention="dot", model="luong", local="p", window=2, embed_dim=8, hidden_dim=8).to(
        "cpu"
    )
    trained, history = ex.fit_cached(model, data, cache_dir=tmp_path, epochs=1, progress=False)
    assert history is not None and len(list((tmp_path / "models").glob("*.pt"))) == 1
    again, history2 = ex.fit_cached(
        ex.build_model(data, attention="dot", model="luong", local="p", window=2, embed_dim=8, hidden_dim=8),
        data,
        cache_dir=tmp_path,
        epochs=1,
        progress=False,
    )
    assert history2 is None and isinstance(again, LuongSeq2Seq) and again.cfg == trained.cfg
    for (k, a), b in zip(trained.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), k
    a = ex.translate(trained, data.test[:5], data, beam_size=3)
    b = ex.translate(again, data.test[:5], data, beam_size=3)
    assert [t.hypothesis for t in a] == [t.hypothesis for t in b]


def test_the_cache_key_covers_model_task_vocabulary_recipe_and_code(tmp_path):
    data = ex.dates_data(n=120)
    model = ex.build_model(data, embed_dim=8, hidden_dim=8)
    key = ex.cache_key(model, data, epochs=1)
    assert key == ex.cache_key(model, data, epochs=1)
    assert key != ex.cache_key(model, data, epochs=2)  # the recipe
    assert key != ex.cache_key(ex.build_model(data, embed_dim=8, hidden_dim=12), data, epochs=1)  # the config
    luong = ex.build_model(data, attention="additive", model="luong", embed_dim=8, hidden_dim=8)
    assert key != ex.cache_key(luong, data, epochs=1)  # the family
    other_vocab = dataclasses.replace(data, tgt_vocab=Vocab(data.tgt_vocab.itos[:4] + data.tgt_vocab.itos[4:][::-1]))
    assert key != ex.cache_key(model, other_vocab, epochs=1)  # the same sizes, other ids
    assert key != ex.cache_key(model, dataclasses.replace(data, train=data.train[:-1]), epochs=1)  # the data
    # the code: the library's code that decides weights, read for its meaning (tests below)
    assert ex.package_fingerprint() == code_fingerprint()


def _copy_package(tmp_path) -> Path:
    copy = tmp_path / "attention"
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".tsv", ".json"):
            (copy / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(PACKAGE)).write_bytes(path.read_bytes())
    return copy


def _edit_docstring(path: Path) -> None:
    """Reword the module's docstring and a function's, add a comment and blank lines."""
    text = path.read_text()
    tree = ast.parse(text)
    first = tree.body[0].value.value
    text = text.replace(first, first + " Reworded for a reader.", 1)
    function = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and ast.get_docstring(n))
    doc = ast.get_docstring(function, clean=False)
    text = text.replace(doc, doc.replace(" ", "  ", 1), 1)
    path.write_text(text + "\n\n# a comment\n")


def test_editing_docstrings_comments_or_the_book_keeps_every_cached_model(tmp_path):
    copy = _copy_package(tmp_path)
    assert code_fingerprint(copy) == code_fingerprint()
    for name in ("models/luong.py", "train.py", "tasks/translation.py", "layers.py"):
        _edit_docstring(copy / name)
    for name in ("viz.py", "widgets.py", "studies/base.py", "book/cli.py"):  # presentation and the book
        (copy / name).write_text((copy / name).read_text() + "\nCHANGED = 1\n")
    assert code_fingerprint(copy) == code_fingerprint()
    # end to end: the cache key computed by the edited copy of the package is this one's
    code = (
        "import json, sys; from attention import experiments as ex; data = ex.dates_data(n=60); "
        "print(ex.cache_key(ex.build_model(data, embed_dim=8, hidden_dim=8), data, epochs=1))"
    )
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    ).stdout
    assert here.strip() and here == there
    # and the edited copy is what ran there
    check = subprocess.run(
        [sys.executable, "-c", "import attention; print(attention.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=True,
    )
    assert check.stdout.startswith(str(copy))


def test_any_change_of_code_that_decides_weights_retrains(tmp_path):
    copy = _copy_package(tmp_path)
    for name in ("local.py", "masks.py", "data/translation.py", "models/luong.py", "tasks/base.py"):
        before = code_fingerprint(copy)
        (copy / name).write_text((copy / name).read_text() + "\n_CHANGED = 1\n")
        assert code_fingerprint(copy) != before, name
    before = code_fingerprint(copy)
    text = (copy / "functional.py").read_text()
    (copy / "functional.py").write_text(text.replace("-inf", "-1e9", 1) if "-inf" in text else text + "\nX = 2\n")
    assert code_fingerprint(copy) != before
    assert normalised_source("x = 1  # one\n") == normalised_source('"""doc"""\nx = (\n    1\n)\n')
    assert normalised_source("x = 1\n") != normalised_source("x = 2\n")


# --- the results registry ---------------------------------------------------------------------


@pytest.mark.parametrize("name", results.list_results())
def test_every_recorded_result_follows_the_schema(name):
    record = results.load_result(name)  # validates
    assert record["name"] == name and record["seeds"]
    raw = json.loads((results.RESULTS_DIR / f"{name}.json").read_text())
    assert set(raw) <= set(results.KEYS)


def test_the_registry_holds_the_books_records():
    assert {"hsk-convergence", "ablation-small"} <= set(results.list_results())


def test_schema_violations_are_named(tmp_path):
    good = results.record_result(
        "demo",
        command="python -m attention demo",
        recipe={"lr": 0.1},
        seeds=[0],
        metrics={"bleu": 1.5},
        wall_seconds=2.0,
        directory=tmp_path,
    )
    assert results.load_result("demo", tmp_path) == good
    assert good["versions"]["torch"] == torch.__version__ and good["machine"]["threads"] >= 1
    for change, message in (
        (dict(seeds=[]), "seeds must be a non-empty list"),
        (dict(metrics={"bleu": float("nan")}), r"metrics.bleu is not a finite number"),
        (dict(extra=1), "unknown key 'extra'"),
        (dict(command="python train.py"), "is not a 'python -m attention"),
        (dict(wall_seconds="1h"), "'wall_seconds' is a str"),
        (dict(created="30/11/2026"), "is not an ISO date"),
    ):
        with pytest.raises(ValueError, match=message):
            results.validate_result(good | change)
    bad = {k: v for k, v in good.items() if k != "versions"}
    with pytest.raises(ValueError, match="missing key 'versions'"):
        results.validate_result(bad)
    (tmp_path / "renamed.json").write_text(json.dumps(good))
    with pytest.raises(ValueError, match="but the file is renamed.json"):
        results.load_result("renamed", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no recorded result .*nothing\.json \(recorded: demo, renamed\)"):
        results.load_result("nothing", tmp_path)


def test_command_line_lists_and_checks_the_records():
    out = subprocess.run(
        [sys.executable, "-m", "attention", "results"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert "hsk-convergence" in out and "python -m attention ablation --budget small" in out
    help_text = subprocess.run(
        [sys.executable, "-m", "attention", "--help"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert all(c in help_text for c in ("convergence", "ablation", "results"))


# --- the import graph -------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def _targets(node, module: str, is_package: bool) -> list[str]:
    """The package modules an import statement loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    out = []
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
            if ".".join(parts[:i]) in MODULES:
                out.append(".".join(parts[:i]))
    return out


def _imports(module: str):
    """(module-level targets, function-level targets) of one module."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    top, inner = [], []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (inner if nested else top).extend(_targets(child, module, path.name == "__init__.py"))
            visit(child, nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    # a module's own parent packages are already initialising when it runs
    ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    return [t for t in top if t not in ancestors and t != module], inner


def test_no_function_level_imports_of_the_package():
    offenders = {m: inner for m in MODULES if (inner := _imports(m)[1])}
    assert not offenders, f"import these at the top of the module instead: {offenders}"


def test_no_import_cycles():
    graph = {m: set(_imports(m)[0]) for m in MODULES}
    assert "attention.studies.registry" in graph["attention.book.cli"]  # the parser sees the edges
    state, stack = {}, []

    def dfs(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n) :] + [n]))
            if n not in state:
                dfs(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            dfs(m)


def test_the_library_has_no_command_line_inside_it():
    """``python -m attention`` is the one entry point; no library module runs code as a script."""
    for module, path in MODULES.items():
        if module in ("attention.__main__",):
            continue
        assert '__name__ == "__main__"' not in path.read_text(), module


def test_docstrings_cite_files_inside_the_repository():
    for path in MODULES.values():
        text = path.read_text()
        assert "shared/" not in text and "STYLE.md" not in text and "DATA.md" not in text, path
    assert (ROOT / "CONTRIBUTING.md").exists()


# --- the two floors: the library, and the book's code (studies, chapters, tools) ------------------

#: the top level of the library: every module a reader imports, and nothing of the book
LIBRARY_TOP = {
    "__init__",
    "__main__",
    "addressing",
    "bleu",
    "checkpoints",
    "cost",
    "device",
    "experiments",
    "explain",
    "functional",
    "hard",
    "layers",
    "local",
    "masks",
    "metrics",
    "provenance",
    "scores",
    "train",
    "viz",
    "widgets",
}
LIBRARY_PACKAGES = {"data", "tasks", "models", "results"}
BOOK_PACKAGES = {"studies", "book"}
#: (from floor, to floor): the only import edges allowed. The library imports nothing of the book;
#: the studies import the library and each other; the book's chapters, tools and command line import
#: anything; ``python -m attention`` (attention.__main__) imports the command line.
ALLOWED_EDGES = {
    ("library", "library"),
    ("studies", "library"),
    ("studies", "studies"),
    ("book", "library"),
    ("book", "studies"),
    ("book", "book"),
    ("entry", "book"),
}


def _floor(module: str) -> str:
    parts = module.split(".")
    if module == "attention.__main__":
        return "entry"
    if len(parts) > 1 and parts[1] in BOOK_PACKAGES:
        return parts[1]
    return "library"


def test_the_top_level_of_the_library_holds_only_library_modules():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert top == LIBRARY_TOP, (
        f"new or missing top-level modules: {sorted(top ^ LIBRARY_TOP)} (a recorded run "
        "goes to attention/studies/, a chapter's figure or a tool to attention/book/)"
    )
    assert packages == LIBRARY_PACKAGES | BOOK_PACKAGES, sorted(packages)


def test_imports_between_the_floors_follow_the_table():
    edges = {(m, t) for m in MODULES for t in _imports(m)[0]}
    assert ("attention.book.cli", "attention.studies.registry") in edges  # the parser sees the floors
    wrong = sorted(f"{m} -> {t}" for m, t in edges if (_floor(m), _floor(t)) not in ALLOWED_EDGES)
    assert not wrong, "imports the floors do not allow:\n  " + "\n  ".join(wrong)


def test_importing_the_library_loads_neither_the_book_nor_matplotlib_nor_ipywidgets():
    code = (
        "import sys, attention, attention.experiments, attention.viz, attention.widgets, attention.models, "
        "attention.tasks, attention.results; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets') "
        "or m.startswith(('attention.studies', 'attention.book'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]", out
