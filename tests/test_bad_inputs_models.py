"""Every mistake a reader makes with a model gets a clear answer (a ValueError naming what is wrong),
never a framework-internal error: token ids outside the vocabulary (an ``IndexError: index out of
range in self`` on the CPU, a device-side assert on CUDA), negative ids, ids of a float dtype,
special ids outside the config's vocabularies, ``max_len < 1``, a story with no slots; and greedy
and beam search decode in eval mode whatever mode the model was left in."""

import re

import pytest
import torch

from attention.models import (
    CMLA,
    DMN,
    NTM,
    AttentionPooling,
    AttentionPoolingConfig,
    BiLSTMPooling,
    CaptionerConfig,
    CMLAConfig,
    DMNConfig,
    HANClassifier,
    HANConfig,
    LSTMNClassifier,
    LSTMNConfig,
    LuongConfig,
    LuongSeq2Seq,
    MemN2N,
    MemN2NConfig,
    NestedConfig,
    NestedSeq2Seq,
    NTMConfig,
    PoolingClassifierConfig,
    SelfAttentiveClassifier,
    SelfAttentiveConfig,
    Seq2Seq,
    Seq2SeqConfig,
    ShowAttendTell,
    Transformer,
    TransformerConfig,
    decoding,
)
from attention.models.checks import check_ids

V = 12  # every vocabulary below
BOS = 2


# --------------------------------------------------------------------------- the shared check


def test_check_ids_names_the_tensor_the_vocabulary_the_id_and_its_position():
    ids = torch.tensor([[1, 2, 3], [4, 15, 12]])
    message = (
        r"src \(2, 3\) has token id 15 at position \(1, 1\), but the source vocabulary has 12 ids \(0\.\.11\); "
        r"2 ids are out of range, from 12 to 15"
    )
    with pytest.raises(ValueError, match=message):
        check_ids(ids, 12, "src", "source")
    with pytest.raises(ValueError, match=r"y_prev \(3,\) has token id -1 at position 2, .* vocabulary has 12 ids"):
        check_ids(torch.tensor([0, 1, -1]), 12, "y_prev", "target")
    with pytest.raises(
        ValueError,
        match=r"tokens must hold token ids \(torch.long or torch.int32\); "
        r"got torch.float32, shape \(2, 3\)",
    ):
        check_ids(ids.float(), 12, "tokens")
    with pytest.raises(ValueError, match=r"tokens must hold token ids \(torch.long or torch.int32\); got torch.bool"):
        check_ids(ids > 2, 12, "tokens")
    with pytest.raises(ValueError, match="tokens must be a tensor of token ids; got list"):
        check_ids([1, 2], 12, "tokens")
    check_ids(ids.clamp(max=11), 12, "src")  # in range: nothing to say
    check_ids(ids.clamp(max=11).int(), 12, "src")  # int32 ids index an embedding too
    check_ids(torch.zeros(0, 3, dtype=torch.long), 12, "src")  # an empty batch has no bad id


# --------------------------------------------------------------------------- the models, each with valid inputs


def sentences(device, B=3, T=5):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, V, (B, T), generator=g)
    lengths = torch.tensor([5, 3, 4][:B])
    tokens[torch.arange(T)[None] >= lengths[:, None]] = 0
    return tokens.to(device), lengths.to(device)


def documents(device):
    tokens = torch.randint(1, V, (2, 3, 4), generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([[4, 2, 0], [3, 0, 0]])
    tokens[torch.arange(4)[None, None] >= lengths[..., None]] = 0
    return tokens.to(device), lengths.to(device)


def stories(device):
    g = torch.Generator().manual_seed(0)
    story = torch.randint(1, V, (2, 3, 4), generator=g)
    story[1, 2:] = 0
    return story.to(device), torch.randint(1, V, (2, 4), generator=g).to(device)


def transformer(**changes):
    return Transformer(
        TransformerConfig(
            **(dict(src_vocab=V, tgt_vocab=V, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0) | changes)
        )
    )


def seq2seq(**changes):
    return Seq2Seq(Seq2SeqConfig(**(dict(src_vocab=V, tgt_vocab=V, embed_dim=8, hidden_dim=8, dropout=0.0) | changes)))


def luong(**changes):
    return LuongSeq2Seq(
        LuongConfig(**(dict(src_vocab=V, tgt_vocab=V, embed_dim=8, hidden_dim=8, dropout=0.0) | changes))
    )


def translation(device):
    src, lengths = sentences(device)
    tgt_in = torch.cat([torch.full((3, 1), BOS, device=device), src[:, :3].clamp(min=4)], 1)  # (B, 4)
    return src, lengths, tgt_in


#: every model fed ids through an embedding: name -> (builder, inputs(device) -> tuple, {index of an id tensor among
#: the inputs: its name})
EMBEDDING_FED = {
    "bilstm-pooling": (
        lambda: BiLSTMPooling(PoolingClassifierConfig(V, 2, embed_dim=8, hidden_dim=4, mlp_dim=8)),
        sentences,
        {0: "tokens"},
    ),
    "self-attentive": (
        lambda: SelfAttentiveClassifier(
            SelfAttentiveConfig(V, 2, embed_dim=8, hidden_dim=4, attention_dim=4, rows=2, mlp_dim=8)
        ),
        sentences,
        {0: "tokens"},
    ),
    "attention-pooling": (
        lambda: AttentionPooling(AttentionPoolingConfig(V, 2, embed_dim=8, hidden_dim=4, attention_dim=4, mlp_dim=8)),
        sentences,
        {0: "tokens"},
    ),
    "lstmn": (
        lambda: LSTMNClassifier(LSTMNConfig(V, 2, embed_dim=8, hidden_dim=4, attention_dim=4)),
        sentences,
        {0: "tokens"},
    ),
    "cmla": (lambda: CMLA(CMLAConfig(V, embed_dim=8, hidden_dim=4, slices=2, rnn_dim=4)), sentences, {0: "tokens"}),
    "han": (
        lambda: HANClassifier(HANConfig(V, 2, embed_dim=8, hidden_dim=4, attention_dim=4)),
        documents,
        {0: "tokens"},
    ),
    "memn2n": (
        lambda: MemN2N(MemN2NConfig(V, 3, embed_dim=8, hops=2, memory_size=4)),
        stories,
        {0: "story", 1: "question"},
    ),
    "dmn": (
        lambda: DMN(DMNConfig(V, 3, embed_dim=8, hidden_dim=8, gate_dim=8, passes=2)),
        stories,
        {0: "story", 1: "question"},
    ),
    "transformer": (transformer, translation, {0: "src", 2: "tgt_in"}),
    "seq2seq": (seq2seq, translation, {0: "src", 2: "tgt_in"}),
    "luong": (luong, translation, {0: "src", 2: "tgt_in"}),
}

CASES = [(name, index) for name, (_, _, ids) in EMBEDDING_FED.items() for index in ids]


def corrupt(x: torch.Tensor, value) -> torch.Tensor:
    """``x`` with its last entry set to ``value``."""
    x = x.clone()
    x.view(-1)[-1] = value
    return x


def last_position(x: torch.Tensor) -> str:
    return re.escape(str(tuple(s - 1 for s in x.shape)))


@pytest.mark.parametrize("name, index", CASES, ids=[f"{n}-{EMBEDDING_FED[n][2][i]}" for n, i in CASES])
def test_an_id_outside_the_vocabulary_is_named_with_its_position(device, name, index):
    build, inputs, names = EMBEDDING_FED[name]
    model = build().to(device)
    args = list(inputs(device))
    model(*args)  # the valid inputs run
    what = names[index]
    for bad in (V, V + 7):
        wrong = list(args)
        wrong[index] = corrupt(args[index], bad)
        with pytest.raises(
            ValueError,
            match=rf"{what} \(.*\) has token id {bad} at position "
            rf"{last_position(args[index])}, but the .*vocabulary has {V} ids",
        ):
            model(*wrong)


@pytest.mark.parametrize("name, index", CASES, ids=[f"{n}-{EMBEDDING_FED[n][2][i]}" for n, i in CASES])
def test_a_negative_id_is_refused(device, name, index):
    build, inputs, names = EMBEDDING_FED[name]
    model = build().to(device)
    args = list(inputs(device))
    args[index] = corrupt(args[index], -1)
    with pytest.raises(ValueError, match=rf"{names[index]} \(.*\) has token id -1 at position"):
        model(*args)


@pytest.mark.parametrize("name, index", CASES, ids=[f"{n}-{EMBEDDING_FED[n][2][i]}" for n, i in CASES])
def test_ids_of_a_float_dtype_are_refused(device, name, index):
    build, inputs, names = EMBEDDING_FED[name]
    model = build().to(device)
    args = list(inputs(device))
    args[index] = args[index].float()
    with pytest.raises(ValueError, match=rf"{names[index]} must hold token ids \(torch.long"):
        model(*args)


@pytest.mark.parametrize("build", [transformer, seq2seq, luong], ids=["transformer", "seq2seq", "luong"])
def test_decoding_and_step_check_their_ids(device, build):
    model = build().to(device).eval()
    src, lengths, _ = translation(device)
    with pytest.raises(ValueError, match=rf"src \(3, 5\) has token id {V} at position \(2, 4\)"):
        model.greedy(corrupt(src, V), lengths)
    with pytest.raises(ValueError, match=rf"src \(3, 5\) has token id {V} at position \(2, 4\)"):
        model.beam_search(corrupt(src, V), lengths, beam_size=2)
    memory, state = model.encode(src, lengths)
    y = torch.full((3,), BOS, device=device)
    model.step(y, state, memory)  # a valid step runs
    with pytest.raises(ValueError, match=rf"y_prev \(3,\) has token id {V} at position 2, but the target vocabulary"):
        model.step(corrupt(y, V), state, memory)


def test_the_transformer_names_the_target_vocabulary_of_tgt_in(device):
    model = transformer(src_vocab=20).to(device)
    src, lengths, tgt_in = translation(device)
    with pytest.raises(ValueError, match=r"tgt_in \(3, 4\) has token id 15 .* target vocabulary has 12 ids"):
        model(corrupt(src, 15), lengths, corrupt(tgt_in, 15))  # 15 is a source id, not a target one


# --------------------------------------------------------------------------- DMN and the captioner share the check


def test_dmn_and_the_captioner_name_the_position_of_a_bad_id(device):
    model = DMN(DMNConfig(V, 3, embed_dim=8, hidden_dim=8, gate_dim=8, passes=2)).to(device)
    story, question = stories(device)
    with pytest.raises(ValueError, match=r"story \(2, 3, 4\) has token id 12 at position \(1, 2, 3\)"):
        model(corrupt(story, V), question)
    cfg = CaptionerConfig(
        vocab=V,
        embed_dim=8,
        hidden_dim=8,
        annotation_dim=8,
        attention_dim=8,
        cnn_channels=4,
        image_height=8,
        image_width=8,
        conv_layers=2,
        pools=1,
    )
    captioner = ShowAttendTell(cfg).to(device)
    images = torch.rand(2, 1, 8, 8, device=device)
    captions = torch.tensor([[1, 5, 6, 2], [1, 7, 2, 0]], device=device)
    captioner(images, captions)
    with pytest.raises(
        ValueError,
        match=r"captions \(2, 4\) has token id 12 at position \(1, 3\), but the caption "
        r"vocabulary has 12 ids",
    ):
        captioner(images, corrupt(captions, V))
    with pytest.raises(ValueError, match=r"captions must hold token ids \(torch.long\); got torch.int32"):
        captioner(images, captions.int())  # the loss gathers with them: int64 only


# --------------------------------------------------------------------------- the nested model (chapter 5b)


def nested(char_level=True):
    return NestedSeq2Seq(
        NestedConfig(
            src_vocab=V,
            tgt_vocab=V,
            char_vocab=9,
            char_level=char_level,
            embed_dim=8,
            hidden_dim=8,
            char_embed_dim=4,
            char_hidden_dim=4,
            dropout=0.0,
        )
    )


def nested_inputs(device):
    src, lengths = sentences(device)
    src[0, 1] = 1  # one <unk> source word, read by the character encoder
    chars = torch.randint(4, 9, (3, 5, 3), generator=torch.Generator().manual_seed(1)).to(device)
    char_lengths = (src != 0).long() * 3  # (B, S): 3 characters per real word
    tgt_in = torch.cat([torch.full((3, 1), BOS, device=device), src[:, :3].clamp(min=4)], 1)  # (B, 4)
    tgt_unk = torch.zeros_like(tgt_in, dtype=torch.bool)
    tgt_unk[0, 1] = True
    tgt_chars_in = torch.randint(4, 9, (3, 4, 3), generator=torch.Generator().manual_seed(2)).to(device)
    return src, lengths, tgt_in, chars, char_lengths, tgt_unk, tgt_chars_in


def test_the_nested_model_checks_words_and_characters(device):
    model = nested().to(device)
    src, lengths, tgt_in, chars, char_lengths, tgt_unk, tgt_chars_in = nested_inputs(device)
    kw = dict(chars=chars, char_lengths=char_lengths, tgt_unk=tgt_unk, tgt_chars_in=tgt_chars_in)
    model(src, lengths, tgt_in, **kw)
    with pytest.raises(ValueError, match=r"src \(3, 5\) has token id 12 at position \(2, 4\), but the source vocab"):
        model(corrupt(src, V), lengths, tgt_in, **kw)
    with pytest.raises(ValueError, match=r"tgt_in \(3, 4\) has token id 12 .* target vocabulary"):
        model(src, lengths, corrupt(tgt_in, V), **kw)
    with pytest.raises(ValueError, match=r"chars \(3, 5, 3\) has token id 9 .* character vocabulary has 9 ids"):
        model(src, lengths, tgt_in, **(kw | dict(chars=corrupt(chars, 9))))
    with pytest.raises(ValueError, match=r"tgt_chars_in \(3, 4, 3\) has token id -2 .* character vocabulary"):
        model(src, lengths, tgt_in, **(kw | dict(tgt_chars_in=corrupt(tgt_chars_in, -2))))
    with pytest.raises(ValueError, match=r"src \(3, 5\) has token id 12"):
        model.greedy(corrupt(src, V), lengths, chars=chars, char_lengths=char_lengths)
    memory, state = model.encode(src, lengths, chars, char_lengths)
    with pytest.raises(ValueError, match=r"y_prev \(3,\) has token id 12 .* target vocabulary"):
        model.step(torch.tensor([2, 2, V], device=device), state, memory)


# --------------------------------------------------------------------------- special ids of the configs


@pytest.mark.parametrize(
    "make, changes, message",
    [
        (TransformerConfig, dict(pad_id=V), r"TransformerConfig.pad_id must be an int in \[0, 12\) .*; got 12"),
        (TransformerConfig, dict(pad_id=-1), r"TransformerConfig.pad_id must be an int in \[0, 12\)"),
        (
            TransformerConfig,
            dict(src_vocab=20, pad_id=15),
            r"pad_id must be an int in \[0, 12\) \(an id of "
            r"src_vocab=20 and tgt_vocab=12\); got 15",
        ),
        (
            TransformerConfig,
            dict(bos_id=V),
            r"TransformerConfig.bos_id must be an int in \[0, 12\) \(an id of "
            r"tgt_vocab=12\); got 12",
        ),
        (TransformerConfig, dict(bos_id=2.0), r"bos_id must be an int"),
        (TransformerConfig, dict(eos_id="3"), r"eos_id must be an int"),
        (Seq2SeqConfig, dict(pad_id=V), r"Seq2SeqConfig.pad_id must be an int in \[0, 12\)"),
        (Seq2SeqConfig, dict(bos_id=V), r"Seq2SeqConfig.bos_id must be an int in \[0, 12\)"),
        (Seq2SeqConfig, dict(tgt_vocab=0), r"Seq2SeqConfig sizes must be positive integers; got \{'tgt_vocab': 0\}"),
        (LuongConfig, dict(bos_id=-1), r"LuongConfig.bos_id must be an int in \[0, 12\)"),
    ],
)
def test_special_ids_outside_the_vocabularies_are_refused_by_the_config(make, changes, message):
    with pytest.raises(ValueError, match=message):
        make(**(dict(src_vocab=V, tgt_vocab=V) | changes))


def test_an_eos_id_the_model_never_emits_is_allowed():
    """An eos_id outside the target vocabulary only means decoding never stops early (tests use it)."""
    assert TransformerConfig(V, V, eos_id=99).eos_id == 99 and Seq2SeqConfig(V, V, eos_id=99).eos_id == 99


@pytest.mark.parametrize(
    "make, extra",
    [
        (PoolingClassifierConfig, dict(classes=2)),
        (SelfAttentiveConfig, dict(classes=2)),
        (AttentionPoolingConfig, dict(classes=2)),
        (LSTMNConfig, dict(classes=2)),
        (HANConfig, dict(classes=2)),
        (CMLAConfig, {}),
        (MemN2NConfig, dict(answers=3)),
        (DMNConfig, dict(answers=3)),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_a_pad_id_outside_the_vocabulary_is_refused_by_every_classifier_config(make, extra):
    for pad_id in (V, -1, 1.5):
        with pytest.raises(ValueError, match=rf"{make.__name__}.pad_id must be an int in \[0, 12\)"):
            make(vocab=V, pad_id=pad_id, **extra)
    assert make(vocab=V, pad_id=V - 1, **extra).pad_id == V - 1


# --------------------------------------------------------------------------- max_len


@pytest.mark.parametrize("max_len", [0, -3, 2.5])
def test_decoding_refuses_a_max_len_below_one(device, max_len):
    model = seq2seq().to(device).eval()
    src, lengths, _ = translation(device)
    with pytest.raises(ValueError, match=rf"max_len must be a positive int .*; got {max_len}"):
        decoding.greedy(model, src, lengths, max_len=max_len)
    with pytest.raises(ValueError, match=rf"max_len must be a positive int .*; got {max_len}"):
        decoding.beam_search(model, src, lengths, beam_size=2, max_len=max_len)
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        transformer().to(device).greedy(src, lengths, max_len=max_len)


# --------------------------------------------------------------------------- DMN: a story with no slots


def test_a_dmn_story_with_no_slots_or_no_word_positions_is_refused(device):
    model = DMN(DMNConfig(V, 3, embed_dim=8, hidden_dim=8, gate_dim=8, passes=2)).to(device)
    story, question = stories(device)
    with pytest.raises(ValueError, match=r"story \(2, 0, 4\) has no sentence slots \(M = 0\)"):
        model(story[:, :0], question)
    with pytest.raises(ValueError, match=r"story \(2, 3, 0\) has no word positions \(J = 0\)"):
        model(story[:, :, :0], question)


# --------------------------------------------------------------------------- decoding in eval mode


def noisy(build):
    torch.manual_seed(0)
    return build(dropout=0.5)


@pytest.mark.parametrize("build", [transformer, seq2seq, luong], ids=["transformer", "seq2seq", "luong"])
def test_greedy_and_beam_search_decode_in_eval_mode_and_restore_the_mode(device, build):
    model = noisy(build).to(device)
    src, lengths, _ = translation(device)
    model.eval()
    greedy, beam = model.greedy(src, lengths, max_len=6), model.beam_search(src, lengths, beam_size=2, max_len=6)
    assert not model.training  # left as it was
    model.train()
    (model.encoder_layers[0] if isinstance(model, Transformer) else model.encoder).eval()  # a mixed mode
    modes = {name: m.training for name, m in model.named_modules()}
    for _ in range(3):  # a model left in train() decodes as in eval(), every time (dropout is off)
        again = model.greedy(src, lengths, max_len=6)
        assert torch.equal(again.tokens, greedy.tokens)
        torch.testing.assert_close(again.attention, greedy.attention)
        assert torch.equal(model.beam_search(src, lengths, beam_size=2, max_len=6).tokens, beam.tokens)
    assert {name: m.training for name, m in model.named_modules()} == modes  # every module's mode is back


def test_the_mode_is_restored_when_decoding_fails(device):
    model = noisy(seq2seq).to(device).train()
    src, lengths, _ = translation(device)
    with pytest.raises(ValueError):
        model.greedy(corrupt(src, V), lengths)
    assert model.training and all(m.training for m in model.modules())


def test_the_nested_greedy_and_the_captioner_decode_in_eval_mode(device):
    torch.manual_seed(0)
    model = NestedSeq2Seq(
        NestedConfig(
            src_vocab=V,
            tgt_vocab=V,
            char_vocab=9,
            embed_dim=8,
            hidden_dim=8,
            char_embed_dim=4,
            char_hidden_dim=4,
            dropout=0.5,
        )
    ).to(device)
    src, lengths, _, chars, char_lengths, _, _ = nested_inputs(device)
    reference = model.eval().greedy(src, lengths, chars=chars, char_lengths=char_lengths, max_len=6)
    model.train()
    for _ in range(3):
        again = model.greedy(src, lengths, chars=chars, char_lengths=char_lengths, max_len=6)
        torch.testing.assert_close(again.attention, reference.attention)
    assert model.training
    torch.manual_seed(0)
    cfg = CaptionerConfig(
        vocab=V,
        embed_dim=8,
        hidden_dim=8,
        annotation_dim=8,
        attention_dim=8,
        cnn_channels=4,
        image_height=8,
        image_width=8,
        conv_layers=2,
        pools=1,
        dropout=0.5,
    )
    captioner = ShowAttendTell(cfg).to(device)
    images = torch.rand(2, 1, 8, 8, device=device)
    tokens, attention = captioner.eval().generate(images, 5)
    captioner.train()
    for _ in range(3):
        again = captioner.generate(images, 5)
        assert torch.equal(again[0], tokens)
        torch.testing.assert_close(again[1], attention)
    assert captioner.training


def test_models_without_ids_are_untouched():
    """The NTM reads bit vectors, not ids: nothing here applies to it."""
    model = NTM(NTMConfig(bits=2, memory_slots=4, memory_width=3, controller_size=5))
    assert model(torch.rand(1, 3, 3)).logits.shape == (1, 3, 2)
