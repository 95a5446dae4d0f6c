"""One small runnable example per model family (attention/book/families.py): every registered family has
one, it trains (finite loss, finite gradients), its attention map is a distribution over the real
positions (or, for independent gates, in [0, 1]), and a seed fixes it."""

import pytest
import torch

from attention.book.families import EXAMPLES, FamilyExample, example
from attention.models import MODELS

#: the families whose example has no attention map
WITHOUT_ATTENTION = {"bilstm-pooling", "copy-lstm"}
#: the families that take no lengths: their batches have no padding to mask
UNPADDED = {"ntm", "copy-lstm"}
#: the families whose map is independent gates in [0, 1], not a distribution: the paper's DMN's sigmoid gates
INDEPENDENT_GATES = {"dmn-paper"}
#: parameters an example leaves without a gradient, by design: CMLA's last layer computes an attention and
#: the next prototypes, which no later layer reads (attention/models/cmla.py, "With one layer, nothing reads it")
UNUSED = {"cmla": ("layers.1.v.", "layers.1.Q.")}
#: the package's families (a test module may register its own, e.g. tests/test_architecture.py)
FAMILIES = sorted(name for name, cls in MODELS.items() if cls.__module__.startswith("attention."))


def test_every_registered_family_has_an_example():
    missing = [name for name in FAMILIES if name not in EXAMPLES]
    assert not missing, f"add an example to attention/book/families.py for the model families {missing}"
    assert set(EXAMPLES) <= set(MODELS), f"examples of unregistered families: {sorted(set(EXAMPLES) - set(MODELS))}"
    assert WITHOUT_ATTENTION | UNPADDED <= set(EXAMPLES)
    with pytest.raises(KeyError, match="no example for model family 'nope'"):
        example("nope")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_trains_and_shows_its_attention(name, device):
    ex = example(name).to(device)
    assert isinstance(ex, FamilyExample) and ex.name == name and type(ex.model) is MODELS[name]
    assert ex.inputs and ex.tokens > 0
    loss = ex.loss()
    assert loss.dim() == 0 and torch.isfinite(loss), loss
    loss.backward()
    params = {n: p for n, p in ex.model.named_parameters() if p.requires_grad}
    assert params and all(p.device.type == device.type for p in params.values())
    missing = [n for n, p in params.items() if p.grad is None and not n.startswith(UNUSED.get(name, ()))]
    assert not missing, f"{name}: parameters without a gradient: {missing}"
    grads = {n: p.grad for n, p in params.items() if p.grad is not None}
    bad = [n for n, g in grads.items() if not torch.isfinite(g).all()]
    assert not bad, f"{name}: non-finite gradients in {bad}"
    assert any(g.abs().sum() > 0 for g in grads.values()), f"{name}: every gradient is zero"

    ex.model.train()
    weights = ex.attention()
    assert ex.model.training  # attention() reads in eval mode, then restores the mode
    if name in WITHOUT_ATTENTION:
        assert weights is None
        return
    assert isinstance(weights, torch.Tensor) and weights.device.type == device.type
    assert torch.isfinite(weights).all() and weights.min() >= 0 and weights.max() <= 1 + 1e-6
    sums = weights.sum(-1)
    one, zero = (sums - 1).abs() <= 1e-5, sums.abs() <= 1e-5
    if name not in INDEPENDENT_GATES:
        assert (one | zero).all(), f"{name}: rows sum to {sums[~(one | zero)].tolist()}"
        assert one.any(), f"{name}: no row of the map is a distribution"
    if name not in UNPADDED:  # the padding of the batch gets exactly zero weight somewhere
        assert (weights == 0).any(), f"{name}: no zero weight, so no padding was masked"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_seed_fixes_the_example(name):
    state = torch.get_rng_state()
    first, again, other = example(name, seed=1), example(name, seed=1), example(name, seed=2)
    assert torch.equal(torch.get_rng_state(), state)  # building leaves the global generator alone
    assert torch.equal(first.loss(), again.loss())
    for a, b in zip(first.inputs, again.inputs):
        assert (a is None and b is None) or torch.equal(a, b)
    assert not torch.equal(first.loss(), other.loss())
