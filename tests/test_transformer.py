"""The Transformer of chapter 6 (attention/models/transformer.py): parity with PyTorch's modules,
cached decoding, causality, padding, the schedule, the registry and a tiny copy task."""

import math
import time
import warnings

import pytest
import torch
from torch import nn

from attention.checkpoints import load_checkpoint, save_checkpoint
from attention.layers import MultiHeadAttention
from attention.masks import lengths_to_mask
from attention.models import (
    MODELS,
    DecoderLayer,
    EncoderLayer,
    Transformer,
    TransformerConfig,
    TransformerOutput,
    TransformerState,
    build,
    model_name,
    noam_schedule,
)

TOL = dict(atol=1e-5, rtol=1e-5)
E, H, FF = 16, 4, 32  # d_model, heads, d_ff
B, S, T = 3, 7, 6
LENGTHS = [7, 4, 1]  # every row has a real token (PyTorch gives NaN on fully padded rows)
MODES = ["eval", "train"]  # train mode with dropout 0 must agree too (same dropout positions)


def small_config(**changes) -> TransformerConfig:
    cfg = dict(src_vocab=11, tgt_vocab=13, d_model=E, num_heads=H, num_layers=2, d_ff=FF, dropout=0.0)
    return TransformerConfig(**(cfg | changes))


def small_model(device, **changes) -> Transformer:
    torch.manual_seed(0)
    return Transformer(small_config(**changes)).to(device).eval()


def batch(device, vocab=11, tgt_vocab=13):
    """Source (B, S) with padding after LENGTHS, lengths (B,), target input (B, T) starting with <bos>."""
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor(LENGTHS)
    src = torch.randint(4, vocab, (B, S), generator=g).masked_fill(~lengths_to_mask(lengths, S), 0)
    tgt = torch.randint(4, tgt_vocab, (B, T), generator=g)
    tgt[:, 0] = 2
    return src.to(device), lengths.to(device), tgt.to(device)


def padding_mask(device):
    return ~lengths_to_mask(torch.tensor(LENGTHS, device=device), S)  # (B, S) True = padding


def blocked_causal(L, device):
    return torch.ones(L, L, dtype=torch.bool, device=device).triu(1)  # (L, L) True = blocked


def set_mode(mode, *modules):
    for m in modules:
        m.train(mode == "train")


# --- parity with PyTorch --------------------------------------------------------------------


def test_multihead_attention_per_head_weights_match_torch(device):
    theirs = nn.MultiheadAttention(E, H, batch_first=True).to(device).eval()
    ours = MultiHeadAttention(E, H).to(device).eval().load_torch_weights(theirs)
    x = torch.randn(B, S, E, device=device)
    pad, causal = padding_mask(device), blocked_causal(S, device)
    out, w = ours(x, x, x, key_padding_mask=pad, attn_mask=causal, average_attn_weights=False)
    ref, ref_w = theirs(x, x, x, key_padding_mask=pad, attn_mask=causal, average_attn_weights=False)
    assert w.shape == (B, H, S, S)
    torch.testing.assert_close(w, ref_w, **TOL)
    torch.testing.assert_close(out, ref, **TOL)
    memory = torch.randn(B, S, E, device=device)  # cross-attention: L = T queries over S keys
    y = torch.randn(B, T, E, device=device)
    out, w = ours(y, memory, memory, key_padding_mask=pad, average_attn_weights=False)
    ref, ref_w = theirs(y, memory, memory, key_padding_mask=pad, average_attn_weights=False)
    torch.testing.assert_close(w, ref_w, **TOL)
    torch.testing.assert_close(out, ref, **TOL)
    assert torch.all(w[1, :, :, 4:] == 0)  # padding gets no weight


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(device, norm_first, mode):
    theirs = nn.TransformerEncoderLayer(E, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).to(device)
    ours = EncoderLayer(E, H, FF, dropout=0.0, norm_first=norm_first).to(device).load_torch_weights(theirs)
    set_mode(mode, theirs, ours)
    x = torch.randn(B, S, E, device=device)
    pad, causal = padding_mask(device), blocked_causal(S, device)
    with torch.no_grad():  # in eval mode, lets PyTorch take its fused fast path
        ref = theirs(x, src_key_padding_mask=pad)
        out, _ = ours(x, key_padding_mask=pad)
        torch.testing.assert_close(out, ref, **TOL)
        ref = theirs(x, src_mask=causal, src_key_padding_mask=pad, is_causal=True)
        out, _ = ours(x, key_padding_mask=pad, attn_mask=causal, is_causal=True)
        torch.testing.assert_close(out, ref, **TOL)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(device, norm_first, mode):
    theirs = nn.TransformerDecoderLayer(E, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).to(device)
    ours = DecoderLayer(E, H, FF, dropout=0.0, norm_first=norm_first).to(device).load_torch_weights(theirs)
    set_mode(mode, theirs, ours)
    y, memory = torch.randn(B, T, E, device=device), torch.randn(B, S, E, device=device)
    pad, causal = padding_mask(device), blocked_causal(T, device)
    tgt_pad = torch.zeros(B, T, dtype=torch.bool, device=device)
    tgt_pad[1, 4:] = True  # padded target positions, after the real ones
    ref = theirs(
        y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=pad, tgt_is_causal=True
    )
    out, self_w, cross_w = ours(
        y,
        memory,
        tgt_mask=causal,
        tgt_key_padding_mask=tgt_pad,
        memory_key_padding_mask=pad,
        tgt_is_causal=True,
        need_weights=True,
    )
    torch.testing.assert_close(out, ref, **TOL)
    assert self_w.shape == (B, H, T, T) and cross_w.shape == (B, H, T, S)
    assert torch.all(self_w.triu(1) == 0) and torch.all(cross_w[2, :, :, 1:] == 0)


class FixedNoise(nn.Module):
    """A stand-in for dropout whose effect depends neither on random numbers nor on memory layout
    (PyTorch's attention returns a transposed view, so real dropout masks land on other elements)."""

    def forward(self, x):
        return 1.5 * x + 0.1


def replace_dropout(module: nn.Module) -> int:
    """Put a FixedNoise wherever ``module`` has an nn.Dropout; return how many."""
    count = 0
    for name, child in module.named_children():
        if isinstance(child, nn.Dropout):
            setattr(module, name, FixedNoise())
            count += 1
        else:
            count += replace_dropout(child)
    return count


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_dropout_sits_where_pytorch_puts_it(device, kind, norm_first):
    """Every residual and feed-forward dropout applies to the same tensor as in PyTorch's layer."""
    torch_class, our_class = (
        (nn.TransformerEncoderLayer, EncoderLayer) if kind == "encoder" else (nn.TransformerDecoderLayer, DecoderLayer)
    )
    theirs = torch_class(E, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).to(device).train()
    ours = our_class(E, H, FF, dropout=0.0, norm_first=norm_first).to(device).load_torch_weights(theirs).train()
    x, memory, pad = torch.randn(B, T, E, device=device), torch.randn(B, S, E, device=device), padding_mask(device)
    extra = {} if kind == "encoder" else dict(memory_key_padding_mask=pad)
    args = (x,) if kind == "encoder" else (x, memory)
    plain = ours(*args, **extra)[0]
    assert replace_dropout(theirs) == replace_dropout(ours) == (3 if kind == "encoder" else 4)
    out = ours(*args, **extra)[0]
    torch.testing.assert_close(out, theirs(*args, **extra), **TOL)
    assert not torch.allclose(out, plain, **TOL)  # the stand-ins did change something


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("norm_first", [False, True])
def test_the_stacks_match_nn_transformer(device, norm_first):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns that pre-LN disables its nested tensors
        theirs = nn.Transformer(E, H, 2, 2, FF, dropout=0.0, batch_first=True, norm_first=norm_first).to(device)
    model = small_model(device, norm_first=norm_first).load_torch_weights(theirs)
    theirs.eval()
    src, lengths, tgt = batch(device)
    pad = padding_mask(device)
    with torch.no_grad():
        x, y = model.embed(src, model.src_embed), model.embed(tgt, model.tgt_embed)  # the same inputs for both
        ref = theirs(
            x,
            y,
            src_key_padding_mask=pad,
            tgt_mask=blocked_causal(T, device),
            memory_key_padding_mask=pad,
            tgt_is_causal=True,
        )  # (B, T, E), before any projection
        memory, _ = model.encoder_stack(x, pad)
        hidden, _, _ = model.decoder_stack(y, memory, pad)
        torch.testing.assert_close(hidden, ref, **TOL)
        ref_memory = theirs.encoder(x, src_key_padding_mask=pad)  # nested tensors zero the padded rows
        real = ~pad
        torch.testing.assert_close(memory[real], ref_memory[real], **TOL)
        torch.testing.assert_close(model(src, lengths, tgt).logits, model.output(ref), **TOL)


def test_fused_and_explicit_attention_agree(device):
    explicit = small_model(device)
    fused = small_model(device, fused=True)
    fused.load_state_dict(explicit.state_dict())
    src, lengths, tgt = batch(device)
    with torch.no_grad():
        torch.testing.assert_close(fused(src, lengths, tgt).logits, explicit(src, lengths, tgt).logits, **TOL)
        a, b = explicit.greedy(src, lengths, max_len=6), fused.greedy(src, lengths, max_len=6)
    assert torch.equal(a.tokens, b.tokens)
    torch.testing.assert_close(a.attention, b.attention, **TOL)


# --- the model ------------------------------------------------------------------------------


def test_forward_returns_every_map(device):
    model = small_model(device)
    src, lengths, tgt = batch(device)
    out = model(src, lengths, tgt, return_attention=True)
    assert isinstance(out, TransformerOutput) and out.logits.shape == (B, T, 13)
    maps = out.maps
    assert [len(maps.encoder_self), len(maps.decoder_self), len(maps.cross)] == [2, 2, 2]
    assert maps.encoder_self[0].shape == (B, H, S, S) and maps.decoder_self[1].shape == (B, H, T, T)
    assert maps.cross[1].shape == (B, H, T, S)
    torch.testing.assert_close(out.attention, maps.cross[-1].mean(1))  # what the other models return
    torch.testing.assert_close(out.attention.sum(-1), torch.ones(B, T, device=device))
    assert torch.all(out.attention[1, :, 4:] == 0) and torch.all(maps.encoder_self[0][1, :, :, 4:] == 0)
    assert torch.all(maps.decoder_self[0].triu(1) == 0)
    plain = model(src, lengths, tgt)
    assert plain.attention is None and plain.maps is None
    torch.testing.assert_close(plain.logits, out.logits)


@pytest.mark.parametrize("options", [dict(), dict(norm_first=True, positional="learned")])
def test_cached_steps_equal_the_full_recomputation(device, options):
    model = small_model(device, **options)
    src, lengths, tgt = batch(device)
    with torch.no_grad():
        full = model(src, lengths, tgt, return_attention=True)
        memory, state = model.encode(src, lengths)
        for t in range(T):
            logits, state, weights = model.step(tgt[:, t], state, memory)
            torch.testing.assert_close(logits, full.logits[:, t], **TOL)
            torch.testing.assert_close(weights, full.attention[:, t], **TOL)
    assert isinstance(state, TransformerState) and state.position == T
    assert state.self_attn[0].keys.shape == (B, H, T, E // H)


def greedy_by_recomputation(model, src, lengths, max_len):
    """Greedy decoding that reruns the whole prefix through the decoder at every step."""
    ys = torch.full((src.shape[0], 1), model.cfg.bos_id, dtype=torch.long, device=src.device)
    for _ in range(max_len):
        next_token = model(src, lengths, ys).logits[:, -1].argmax(-1)  # (B,)
        ys = torch.cat([ys, next_token[:, None]], 1)
    return ys[:, 1:]


def test_greedy_with_the_cache_equals_greedy_by_recomputation(device):
    model = small_model(device, eos_id=99)  # an id never produced: both run max_len steps, no padding after EOS
    src, lengths, _ = batch(device)
    with torch.no_grad():
        cached = model.greedy(src, lengths, max_len=7)
        recomputed = greedy_by_recomputation(model, src, lengths, 7)
    assert cached.tokens.shape == (B, 7)
    assert torch.equal(cached.tokens, recomputed)
    beams = model.beam_search(src, lengths, beam_size=3, max_len=5)
    assert beams.tokens.shape[0] == B and beams.tokens.dim() == 2 and beams.attention.shape[::2] == (B, S)
    assert torch.isfinite(beams.scores).all()


def test_a_later_target_token_never_changes_earlier_outputs(device):
    model = small_model(device)
    src, lengths, tgt = batch(device)
    with torch.no_grad():
        before = model(src, lengths, tgt).logits
        for t in range(T - 1):
            changed = tgt.clone()
            changed[:, t + 1] = (changed[:, t + 1] - 3) % 9 + 4  # another real token
            after = model(src, lengths, changed).logits
            torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], **TOL)
            assert not torch.allclose(after[:, t + 1], before[:, t + 1], **TOL)


def test_padding_is_ignored_and_a_fully_padded_row_gives_no_nan(device):
    model = small_model(device)
    src, lengths, tgt = batch(device)
    before = model(src, lengths, tgt, return_attention=True)
    other = src.clone()
    other[1, 4:], other[2, 1:] = 5, 7  # real tokens where the padding was
    after = model(other, lengths, tgt, return_attention=True)
    torch.testing.assert_close(after.logits, before.logits, **TOL)
    torch.testing.assert_close(after.attention, before.attention, **TOL)
    model.train()
    empty = lengths.clone()
    empty[2] = 0  # a source with no token at all
    out = model(src, empty, tgt, return_attention=True)
    assert torch.isfinite(out.logits).all() and torch.all(out.attention[2] == 0)
    out.logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    with torch.no_grad():
        assert torch.isfinite(model.eval().beam_search(src, empty, beam_size=2, max_len=3).scores).all()


def test_embeddings_are_scaled_and_positions_are_sinusoids(device):
    model = small_model(device)
    src, _, _ = batch(device)
    table = model.positions.table  # (P, E)
    pos, i = 5, 3
    assert table[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / E)), abs=1e-6)
    assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / E)), abs=1e-6)
    assert table.device.type == device.type and "positions.table" not in model.state_dict()  # a buffer
    expected = model.src_embed(src) * math.sqrt(E) + table[:S]  # §3.4: embeddings times sqrt(d_model)
    torch.testing.assert_close(model.embed(src, model.src_embed), expected)
    torch.testing.assert_close(model.embed(src[:, 2:3], model.src_embed, start=2), expected[:, 2:3])
    learned = small_model(device, positional="learned")
    assert isinstance(learned.positions.table, nn.Parameter) and "positions.table" in learned.state_dict()


def test_tied_and_shared_embeddings():
    model = Transformer(small_config(src_vocab=13, tie_embeddings=True, share_embeddings=True))
    assert model.output.weight is model.tgt_embed.weight and model.src_embed is model.tgt_embed
    untied = Transformer(small_config())
    assert untied.output.weight is not untied.tgt_embed.weight and untied.src_embed is not untied.tgt_embed
    with pytest.raises(ValueError, match="share_embeddings needs one vocabulary; got src_vocab=11, tgt_vocab=13"):
        small_config(share_embeddings=True)


# --- schedule, registry, errors -------------------------------------------------------------


def test_noam_schedule_peaks_at_warmup():
    factor = noam_schedule(512, warmup=4000)
    rates = [factor(s) for s in range(1, 12001)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == 4000
    assert factor(4000) == pytest.approx(512**-0.5 * 4000**-0.5)
    assert factor(0) == factor(1) > 0  # LambdaLR starts at 0
    assert factor(16000) == pytest.approx(factor(4000) / 2)  # step^-0.5 after the peak
    optimizer = torch.optim.Adam([nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_schedule(16, warmup=3))
    lrs = []
    for _ in range(5):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs[3] == max(lrs) == pytest.approx(16**-0.5 * 3**-0.5)


def test_registry_and_checkpoint_round_trip(device, tmp_path):
    assert MODELS["transformer"] is Transformer
    model = build(
        "transformer",
        {
            "src_vocab": 11,
            "tgt_vocab": 13,
            "d_model": E,
            "num_heads": H,
            "num_layers": 1,
            "d_ff": FF,
            "num_decoder_layers": 2,
        },
    )
    assert model_name(model) == "transformer" and len(model.encoder_layers) == 1 and len(model.decoder_layers) == 2
    model = model.to(device).eval()
    src, lengths, tgt = batch(device)
    save_checkpoint(tmp_path / "t.pt", model)
    again, _ = load_checkpoint(tmp_path / "t.pt", expect="transformer", map_location=device)
    assert again.cfg == model.cfg
    torch.testing.assert_close(again.eval()(src, lengths, tgt).logits, model(src, lengths, tgt).logits)


def test_clear_errors():
    with pytest.raises(ValueError, match="d_model=30 is not divisible by num_heads=4"):
        small_config(d_model=30)
    with pytest.raises(ValueError, match=r"sizes must be positive integers; got \{'d_ff': 0\}"):
        small_config(d_ff=0)
    with pytest.raises(ValueError, match="positional must be 'sinusoidal' or 'learned'; got 'rotary'"):
        small_config(positional="rotary")
    model = Transformer(small_config(max_len=8))
    src, lengths, tgt = batch("cpu")
    with pytest.raises(ValueError, match=r"src must be \(B, S\) with src_lengths \(B,\); got src \(7,\)"):
        model(src[0], lengths, tgt)
    with pytest.raises(ValueError, match=r"tgt_in must be \(B, T\) with the source's B; .*tgt_in \(2, 6\)"):
        model(src, lengths, tgt[:2])
    with pytest.raises(ValueError, match="exceed max_len=8"):
        model(src, lengths, tgt.repeat(1, 2))
    layer = EncoderLayer(E, H, FF)
    with pytest.raises(ValueError, match=r"norm_first=True, this layer has norm_first=False"):
        layer.load_torch_weights(nn.TransformerEncoderLayer(E, H, FF, batch_first=True, norm_first=True))
    with pytest.raises(ValueError, match=r"\(d_model, nhead, dim_feedforward\) = \(16, 2, 32\).*gelu"):
        layer.load_torch_weights(nn.TransformerEncoderLayer(E, 2, FF, activation="gelu", batch_first=True))
    with pytest.raises(ValueError, match="DecoderLayer copies a TransformerDecoderLayer"):
        DecoderLayer(E, H, FF).load_torch_weights(nn.TransformerEncoderLayer(E, H, FF))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one_layer = nn.Transformer(E, H, 1, 1, FF, batch_first=True)
    with pytest.raises(ValueError, match=r"\(encoder, decoder\) layers = \(1, 1\), this model has \(2, 2\)"):
        model.load_torch_weights(one_layer)


# --- it learns ------------------------------------------------------------------------------


def test_a_one_layer_transformer_learns_to_copy():
    """Copy 5 tokens from a 10-symbol vocabulary: >= 90% token accuracy by greedy decoding."""
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(
            src_vocab=14, tgt_vocab=14, d_model=32, num_heads=4, num_layers=1, d_ff=64, dropout=0.0, max_len=8
        )
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_schedule(32, warmup=30))
    g = torch.Generator().manual_seed(0)
    lengths = torch.full((64,), 5)

    def sample(n):
        seq = torch.randint(4, 14, (n, 5), generator=g)  # symbols 4..13 (0-3: pad, unk, bos, eos)
        return seq, torch.cat([torch.full((n, 1), 2), seq], 1), torch.cat([seq, torch.full((n, 1), 3)], 1)

    start = time.perf_counter()
    model.train()
    for _ in range(250):
        src, tgt_in, tgt_out = sample(64)
        loss = nn.functional.cross_entropy(model(src, lengths, tgt_in).logits.reshape(-1, 14), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    src, _, _ = sample(64)
    with torch.no_grad():
        out = model.eval().greedy(src, lengths, max_len=6).tokens
    accuracy = (out[:, :5] == src).float().mean().item()
    assert accuracy >= 0.9, (accuracy, loss.item(), time.perf_counter() - start)
