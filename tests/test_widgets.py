"""Explorers (live and static) and the figure functions they wrap (the library's and the chapters')."""

import dataclasses
import itertools
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

from attention import viz, widgets
from attention.book.chapters import ch04, ch05, ch06, ch07, ch08, common
from attention.data import collate
from attention.metrics import spearman
from attention.models import (
    HANClassifier,
    HANConfig,
    LSTMNClassifier,
    LSTMNConfig,
    NestedSeq2Seq,
    SelfAttentiveClassifier,
    SelfAttentiveConfig,
    Transformer,
    TransformerConfig,
)

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"


def test_live_explorer_redraws_for_every_control():
    e = ch04.score_explorer(mode="live")
    assert e.mode == "live"
    assert bytes(e.image.value) == viz.figure_to_png(ch04.score_weights_figure())  # defaults = the book's figure
    for name, control in e.controls.items():
        before = bytes(e.image.value)
        control.value = ch04.SCORE_EXPLORER_CONTROLS[name][-1]
        assert bytes(e.image.value) != before, f"moving {name} did not change the figure"


def test_static_explorer_precomputes_every_combination_in_order():
    controls = {"score": ["dot", "cosine"], "dim": [4, 64], "temperature": [1.0, 0.5]}
    e = widgets.explorer(ch04.score_weights_figure, controls, mode="static")
    assert e.mode == "static" and e.frames == 8
    stack = e.widget.children[1]
    leaves = []
    for i, j, k in itertools.product(range(2), range(2), range(2)):
        leaves.append(bytes(stack.children[i].children[j].children[k].value))
    assert len(set(leaves)) == 8
    expected = viz.figure_to_png(ch04.score_weights_figure("cosine", 4, 0.5))
    assert bytes(stack.children[1].children[0].children[1].value) == expected


def test_static_explorer_links_every_stack_to_its_control():
    e = widgets.explorer(
        ch04.score_weights_figure, {"score": ["dot", "general"], "dim": [4, 8]}, defaults={"dim": 8}, mode="static"
    )
    pairs = {(link.source[0].model_id, link.source[1], link.target[0].model_id, link.target[1]) for link in e.links}
    assert len(e.links) == 3
    outer = e.widget.children[1]
    assert (e.controls["score"].model_id, "index", outer.model_id, "selected_index") in pairs
    for inner in outer.children:
        assert (e.controls["dim"].model_id, "index", inner.model_id, "selected_index") in pairs
        assert inner.selected_index == 1  # the default dim=8


def test_auto_mode_follows_book_build_flag(monkeypatch):
    small = {"score": ["dot"], "dim": [4]}
    monkeypatch.setenv("ATTENTION_BOOK_STATIC", "1")
    assert widgets.explorer(ch04.score_weights_figure, small).mode == "static"
    monkeypatch.delenv("ATTENTION_BOOK_STATIC")
    assert widgets.explorer(ch04.score_weights_figure, small).mode == "live"


def test_explorer_rejects_bad_defaults():
    with pytest.raises(ValueError, match="dim=5 is not among its options"):
        ch04.score_explorer(mode="live", dim=5)
    with pytest.raises(ValueError, match=r"unknown controls \['width'\]"):
        ch04.score_explorer(mode="live", width=3)
    with pytest.raises(ValueError, match="mode must be"):
        ch04.score_explorer(mode="fast")


def test_heatmap_labels_and_errors():
    ax = viz.heatmap(torch.softmax(torch.randn(2, 3), -1), ["a", "b", "c"], ["x", "y"], annotate=True)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="x_labels .* 2 labels for 3 weights"):
        viz.heatmap(torch.rand(2, 3), ["a", "b"])
    with pytest.raises(ValueError, match="2-D"):
        viz.heatmap(torch.rand(2, 3, 4))


def test_heatmap_draws_chinese_tokens():
    if viz.cjk_font() is None:
        if IN_CI:
            pytest.fail("no CJK font installed in CI (scripts/install.sh installs fonts-noto-cjk)")
        pytest.skip("no CJK font installed: apt-get install fonts-noto-cjk")
    ax = viz.heatmap(torch.eye(2), ["機器", "學習"], ["machine", "learning"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        viz.figure_to_png(ax.figure)


def test_highlight_html():
    text = viz.highlight(["機器", "<b>"], torch.tensor([0.75, 0.25]))
    html = text._repr_html_()
    assert "&lt;b&gt;" in html and "rgba(255, 127, 14, 1.00)" in html and "rgba(255, 127, 14, 0.33)" in html
    with pytest.raises(ValueError, match="2 tokens and 3 weights"):
        viz.highlight(["a", "b"], [0.1, 0.2, 0.7])


COLAB_CHECK = textwrap.dedent("""
    import ipywidgets, sys
    assert ipywidgets.__version__ == "7.7.1", ipywidgets.__version__
    assert ipywidgets.__file__.startswith(sys.argv[1]), ipywidgets.__file__
    import attention.book.chapters  # every chapter module registers its explorers
    from attention import widgets
    for name, make in widgets.EXPLORERS.items():
        e = make(mode="live")
        for cname, control in e.controls.items():
            for value in [o[1] for o in control.options if o[1] != control.value]:
                before = bytes(e.image.value)
                control.value = value
                assert bytes(e.image.value) != before, (name, cname, value)
        print("ok", name, len(e.controls))
""")


@pytest.fixture(scope="session")
def ipywidgets7():
    """ipywidgets 7.7.1 (Colab's front end) in its own folder, put ahead of this environment."""
    target = ROOT / ".cache" / "ipywidgets-7.7.1"
    if not (target / "ipywidgets").exists():
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            "ipywidgets==7.7.1",
            "ipython_genutils==0.2.0",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            msg = f"could not install ipywidgets 7.7.1 (offline?): {done.stderr[-500:]}"
            pytest.fail(msg) if IN_CI else pytest.skip(msg)
    return target


def test_live_explorers_work_with_colab_ipywidgets_7(ipywidgets7):
    env = dict(os.environ, PYTHONPATH=str(ipywidgets7), ATTENTION_BOOK_STATIC="0")
    done = subprocess.run(
        [sys.executable, "-c", COLAB_CHECK, str(ipywidgets7)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("ok ") == len(widgets.EXPLORERS)


def test_head_explorer_maps_are_the_ones_decoding_computes():
    """Chapter 6: the teacher-forced pass over the greedy output gives the maps of step-by-step decoding."""
    model, data = ch06._demo_transformer()
    pair = data.test[0]
    maps = ch06._head_maps(model, data, pair, max_len=6)
    T, S, H = len(maps["written"]), len(pair.src), model.cfg.num_heads
    assert maps["fed"][0] == "<bos>" and maps["fed"][1:] == maps["written"][:-1]
    assert [w.shape for w in maps["encoder self"]] == [(H, S, S)] * model.cfg.encoder_layers
    assert [w.shape for w in maps["decoder self"]] == [(H, T, T)] * model.cfg.decoder_layers
    assert all(torch.all(w.triu(1) == 0) for w in maps["decoder self"])  # causal: nothing ahead
    batch = collate([pair], data.src_vocab, data.tgt_vocab)
    stepwise = model.greedy(batch.src, batch.src_lengths, max_len=6).attention[0, :T]  # (T, S) last layer, head mean
    torch.testing.assert_close(maps["cross"][-1].mean(0), stepwise, atol=1e-5, rtol=1e-5)


def test_head_explorer_live_starts_on_the_last_layers_cross_attention():
    e = ch06.head_explorer(mode="live")
    assert list(e.controls) == ["sentence", "kind", "layer", "head"]
    assert [o[1] for o in e.controls["kind"].options] == list(ch06.HEAD_KINDS)
    assert (e.controls["kind"].value, e.controls["layer"].value, e.controls["head"].value) == ("cross", 2, 1)
    assert len({language.split(":")[0] for language, _ in e.controls["sentence"].options}) == 3  # three languages


def test_head_explorer_static_frames_follow_the_controls():
    model, data = ch06._demo_transformer()
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(
            model.cfg.src_vocab,
            model.cfg.tgt_vocab,
            d_model=8,
            num_heads=2,
            num_encoder_layers=2,
            num_decoder_layers=1,
            d_ff=16,
        )
    )
    pairs = data.test[:2]
    e = ch06.head_explorer(model, data, pairs, max_len=3, mode="static")
    assert e.frames == 2 * 3 * 2 * 2  # sentences × kinds × layers × heads
    maps = ch06._head_maps(model, data, pairs[1], max_len=3)
    leaf = e.widget.children[1].children[1].children[0].children[1].children[0]  # 2nd sentence, encoder self, 2, 1
    expected = ch06.head_map_figure(maps["encoder self"][1][0], pairs[1].src, pairs[1].src, "encoder self", 2, 1)
    assert bytes(leaf.value) == viz.figure_to_png(expected)
    no_layer = e.widget.children[1].children[0].children[2].children[1].children[0]  # cross, layer 2: none
    assert bytes(no_layer.value) == viz.figure_to_png(ch06.head_map_figure(None, [], [], "cross", 2, 1))


def _sentiment_models():
    """An untrained LSTMN and two Lin et al. models on the demo sentences."""
    data = common._demo_sentiment()
    torch.manual_seed(0)
    lstmn = LSTMNClassifier(LSTMNConfig(len(data.vocab), 2, embed_dim=8, hidden_dim=8, attention_dim=8))
    lin = {}
    for seed, name in enumerate(("with penalty", "without penalty")):
        torch.manual_seed(seed)
        lin[name] = SelfAttentiveClassifier(
            SelfAttentiveConfig(len(data.vocab), 2, embed_dim=8, hidden_dim=8, attention_dim=4, rows=3, mlp_dim=8)
        )
    return data, lstmn, lin


def test_lstmn_explorer_shows_each_words_row_of_the_strictly_lower_triangular_map():
    data, model, _ = _sentiment_models()
    sentences = data.test[:2]
    e = ch06.lstmn_explorer(model, data, sentences, mode="static")
    longest = max(len(s.tokens) for s in sentences)
    assert list(e.controls) == ["sentence", "word"] and e.frames == 2 * longest
    weights = common._sentence_attention(model, data, sentences[1], "intra")  # (T, T)
    T = len(sentences[1].tokens)
    assert weights.shape == (T, T) and torch.all(weights.triu() == 0)  # nothing on or above the diagonal
    torch.testing.assert_close(weights[1:].sum(-1), torch.ones(T - 1))
    leaf = e.widget.children[1].children[1].children[3]  # 2nd sentence, word 4
    assert bytes(leaf.value) == viz.figure_to_png(ch06.intra_attention_figure(list(sentences[1].tokens), weights, 4))
    if T < longest:  # a word the shorter sentence lacks says so
        beyond = e.widget.children[1].children[1].children[longest - 1]
        assert bytes(beyond.value) == viz.figure_to_png(
            ch06.intra_attention_figure(sentences[1].tokens, weights, longest)
        )


def test_rows_explorer_frames_follow_sentence_model_and_row():
    data, _, lin = _sentiment_models()
    e = ch06.rows_explorer(lin, data, data.test[:1], mode="static")
    assert list(e.controls) == ["sentence", "model", "row"] and e.frames == 1 * 2 * 3
    A = common._sentence_attention(lin["without penalty"], data, data.test[0], "rows")  # (R, T)
    torch.testing.assert_close(A.sum(-1), torch.ones(3))
    leaf = e.widget.children[1].children[0].children[1].children[2]  # without penalty, row 3
    expected = viz.attention_rows_figure(list(data.test[0].tokens), A, 3, title="without penalty")
    assert bytes(leaf.value) == viz.figure_to_png(expected)
    with pytest.raises(ValueError, match="same number of rows"):
        torch.manual_seed(0)
        other = SelfAttentiveClassifier(SelfAttentiveConfig(len(data.vocab), 2, embed_dim=8, hidden_dim=8, rows=2))
        ch06.rows_explorer({"a": lin["with penalty"], "b": other}, data, mode="live")


def test_intra_and_rows_figures_check_their_shapes():
    with pytest.raises(ValueError, match=r"\(3, 3\) map for 3 tokens"):
        ch06.intra_attention_figure(["a", "b", "c"], torch.zeros(2, 2), 2)
    with pytest.raises(ValueError, match="row must be in 1..2"):
        viz.attention_rows_figure(["a", "b"], torch.full((2, 2), 0.5), 3)
    with pytest.raises(ValueError, match="2 tokens and rows over 3 words"):
        viz.attention_rows_figure(["a", "b"], torch.full((2, 3), 1 / 3), 1)


def test_han_explorer_frames_follow_document_and_view():
    data = ch05._demo_documents()
    torch.manual_seed(0)
    model = HANClassifier(HANConfig(len(data.vocab), 2, embed_dim=8, hidden_dim=4, attention_dim=8))
    e = ch05.han_explorer(model, data, data.test[:2], mode="static")
    assert list(e.controls) == ["document", "view"] and e.frames == 2 * 2
    words, sentences = ch05._document_attention(model, data, data.test[1])  # (N, T), (N,)
    torch.testing.assert_close(sentences.sum(), torch.tensor(1.0))
    torch.testing.assert_close(words.sum(-1), torch.ones(3))
    doc = data.test[1]
    rho = spearman(sentences.tolist(), [abs(r) for r in doc.meta["ratings"]])
    expected = ch05.han_document_figure(
        doc.sentences,
        words,
        sentences,
        doc.meta["ratings"],
        view=ch05.DOCUMENT_VIEWS[1],
        title=f"3 sentences; Spearman(attention, |rating|) = {rho:+.2f}",
    )
    leaf = e.widget.children[1].children[1].children[1]  # 2nd document, people's ratings
    assert bytes(leaf.value) == viz.figure_to_png(expected)
    unrated = [dataclasses.replace(d, meta={}) for d in data.test[:2]]
    assert list(ch05.han_explorer(model, data, unrated, mode="live").controls["view"].options) == [
        (ch05.DOCUMENT_VIEWS[0], ch05.DOCUMENT_VIEWS[0])
    ]
    with pytest.raises(ValueError, match="needs a model with attention"):
        ch05.han_explorer(HANClassifier(HANConfig(len(data.vocab), 2, pool="max")), data, mode="live")


def test_han_document_figure_checks_its_inputs():
    with pytest.raises(ValueError, match=r"got 2 sentences \(longest 3 words\)"):
        ch05.han_document_figure([["a"], ["b", "c", "d"]], torch.zeros(2, 2), torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="no human ratings to show"):
        ch05.han_document_figure([["a"]], torch.ones(1, 1), torch.ones(1), view=ch05.DOCUMENT_VIEWS[1])


def test_nested_explorer_shows_the_character_attention_of_each_written_word():
    model, data = ch05._demo_spelling()
    e = ch05.nested_explorer(model, data, mode="static")
    words = ch05._written_words(model, data, data.test[0])
    # the corrected words lack from the demo's target vocabulary: the character decoder writes them
    assert [w["target"] for w in words] == ["receive", "tomorrow"]
    assert list(e.controls) == ["word"] and e.frames == len(e.controls["word"].options) >= 1
    first = words[0]
    L = len(data.test[0].src[first["source"]])
    torch.testing.assert_close(first["beta"].sum(-1), torch.ones(len(first["written"])))  # each letter's row
    assert torch.all(first["beta"][:, L:] == 0)  # nothing on the padding after the source word's letters
    expected = ch05.nested_attention_figure(
        data.test[0].src, first["alpha"], first["source"], first["written"], first["beta"]
    )
    assert bytes(e.widget.children[1].children[0].value) == viz.figure_to_png(expected)
    word_only = NestedSeq2Seq(dataclasses.replace(model.cfg, char_level=False))
    with pytest.raises(ValueError, match="needs a model with char_level=True"):
        ch05.nested_explorer(word_only, data, mode="live")


def test_memory_explorer_frames_follow_question_and_hop():
    model, data = ch07._demo_memory()
    questions = [q for q in data.test if len(q.story) >= 2][:2]
    e = ch07.memory_explorer(model, data, questions, mode="static")
    assert list(e.controls) == ["question", "hop"] and e.frames == 2 * 2
    weights, predicted = ch07._story_hops(model, data, questions[1])  # (K, M)
    kept, supports = data.memory(questions[1])
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))
    expected = ch07.memory_hops_figure(
        kept, weights, 2, supports, questions[1].question, questions[1].answer, predicted
    )
    assert bytes(e.widget.children[1].children[1].children[1].value) == viz.figure_to_png(expected)


def test_addressing_explorer_draws_the_four_stages_of_ntm_addressing():
    e = ch07.addressing_explorer(mode="static")
    sizes = [len(v) for v in ch07.ADDRESSING_CONTROLS.values()]
    assert list(e.controls) == list(ch07.ADDRESSING_CONTROLS) and e.frames == math.prod(sizes)
    live = ch07.addressing_explorer(mode="live", g=0.0)
    before = bytes(live.image.value)
    live.controls["beta"].value = 1.0  # with g = 0 the content weights are ignored: only that panel changes
    assert bytes(live.image.value) != before
    with pytest.raises(ValueError, match="is not among its options"):
        ch07.addressing_explorer(mode="live", gamma=2.0)


def test_glimpse_explorer_frames_follow_image_model_step_and_view():
    models, data = ch08._demo_captions()
    e = ch08.glimpse_explorer(models, data, data.test[:2], mode="static")
    assert list(e.controls) == ["image", "model", "step", "view"]
    steps = len(e.controls["step"].options)
    assert e.frames == 2 * len(models) * steps * len(ch08.GLIMPSE_VIEWS)
    live = ch08.glimpse_explorer(models, data, data.test[:2], mode="live")
    before = bytes(live.image.value)
    live.controls["view"].value = "hard draw 1"  # outlines a drawn cell
    assert bytes(live.image.value) != before
    # the frame drawn is the model's own attention at that step, over its grid
    model = models["hard"]
    batch = data.collate([data.test[1]])
    tokens, attention = model.generate(batch.images, len(data.test[1]) + 2)
    label = e.controls["image"].options[1][1]
    live.controls["image"].value = label
    live.controls["model"].value = "hard"
    live.controls["step"].value = 1
    live.controls["view"].value = "weights"
    words = [data.vocab.itos[t] for t in tokens[0].tolist()]
    n = words.index("<eos>") + 1 if "<eos>" in words else len(words)
    expected = ch08.glimpse_figure(
        batch.images[0, 0], attention[0, 0].reshape(model.grid), words[:n], 1, None, title="hard attention, step 1"
    )
    assert bytes(live.image.value) == viz.figure_to_png(expected)


def test_chosen_features_are_sharp_and_read_differently():
    P = torch.tensor(
        [
            [0.95, 0.9, 0.15, 0.5],  # (T=2, F=4): features 0 and 1 read word 0, feature 2 word 1,
            [0.05, 0.1, 0.85, 0.5],
        ]
    )  # feature 3 both, least sharp
    assert ch04.chosen_features([P], 2) == [0, 2]  # 1 overlaps 0 by 0.95, 3 overlaps 0 by 0.55
    assert ch04.chosen_features([P], 3) == [0, 1, 2]  # filled up by sharpness: 1 (0.9) before 3 (0.5)
    assert ch04.chosen_features([P], 9) == [0, 1, 2, 3]


def test_features_explorer_frames_follow_sentence_and_feature():
    model, data = common._demo_features()
    e = ch04.features_explorer(model, data, data.test[:2], features=5, mode="static")
    assert list(e.controls) == ["sentence", "feature"] and e.frames == 2 * 5
    shown = [o[1] for o in e.controls["feature"].options]
    P = common._sentence_attention(model, data, data.test[1], "features")  # (T, F)
    torch.testing.assert_close(P.sum(0), torch.ones(P.shape[1]))
    leaf = e.widget.children[1].children[1].children[2]  # second sentence, third feature shown
    expected = viz.attention_rows_figure(
        list(data.test[1].tokens),
        P[:, shown].T,
        3,
        row_labels=[f"feature {k}" for k in shown],
        title="multi-dimensional attention: one distribution per feature",
    )
    assert bytes(leaf.value) == viz.figure_to_png(expected)
    scalar = dataclasses.replace(model.cfg, pool="scalar")
    with pytest.raises(ValueError, match="pool='features'"):
        ch04.features_explorer(type(model)(scalar), data, mode="live")


def test_coupled_explorer_frames_follow_sentence_and_attention():
    model, data = ch04._demo_coupled()
    e = ch04.coupled_explorer(model, data, data.test[:2], mode="static")
    rows = ["aspect, layer 1", "opinion, layer 1", "aspect, layer 2", "opinion, layer 2"]
    assert list(e.controls) == ["sentence", "attention"] and e.frames == 2 * 4
    assert [o[1] for o in e.controls["attention"].options] == rows
    report = data.evaluate(model, [data.test[0]])
    a = report["attention"][0]
    weights = torch.stack([a["aspect"][0], a["opinion"][0], a["aspect"][1], a["opinion"][1]])
    leaf = e.widget.children[1].children[0].children[3]  # first sentence, opinion at layer 2
    predicted = report["predictions"][0]
    labels = [
        w
        + (
            f" [{'A' if predicted['aspect'][i] else 'P' if predicted['opinion'][i] else '-'}/-]"
            if predicted["aspect"][i] or predicted["opinion"][i]
            else ""
        )
        for i, w in enumerate(data.test[0].tokens)
    ]
    expected = viz.attention_rows_figure(
        labels, weights, 4, row_labels=rows, title="coupled attention; [model/silver]: A aspect, P opinion"
    )
    assert bytes(leaf.value) == viz.figure_to_png(expected)


def _variance_metrics():
    """A record's metrics in the shape of ``reinforce-variance``: 2 seeds x 3 baselines, 3 updates."""
    runs = []
    for seed in (0, 1):
        for b, scale in (("moving", 0.01), ("learned", 0.5), ("none", 1.0)):
            curve = []
            for k, u in enumerate((0, 25, 50)):
                none = 1e-5 * (1 + k + seed)
                own = {"mean_variance": none * scale, "mean_sq_grad": 1e-6}
                curve.append({"update": u, "own": own, "none": {"mean_variance": none}, "ratio": scale})
            runs.append({"baseline": b, "seed": seed, "curve": curve})
    return {"runs": runs}


def test_variance_explorer_frames_follow_update_and_view():
    metrics = _variance_metrics()
    e = ch08.variance_explorer(metrics, mode="static")
    assert list(e.controls) == ["update", "view"] and e.frames == 3 * len(ch08.VARIANCE_VIEWS)
    live = ch08.variance_explorer(metrics, mode="live")
    live.controls["update"].value = 25
    assert bytes(live.image.value) == viz.figure_to_png(ch08.variance_figure(metrics, 25, "mean over seeds"))
    with pytest.raises(ValueError, match=r"update 30 was not measured; the record has \[0, 25, 50\]"):
        ch08.variance_figure(metrics, 30)
    with pytest.raises(ValueError, match="view must be one of"):
        ch08.variance_figure(metrics, 0, "median")
