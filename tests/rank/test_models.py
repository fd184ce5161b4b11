"""The model zoo: exact reference sizes, the catalog contract, training on CPU, FLOPs, plug-ins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from torchscale.contracts.catalog import BUILTIN_MODELS, WORKLOAD_MODELS
from torchscale.contracts.errors import ModelError, TorchScaleError
from torchscale.contracts.model_specs.listing import rows as listing_rows
from torchscale.contracts.model_specs.registry import BUILTIN
from torchscale.rank.models import (
    ModelBundle,
    build_model,
    call_model,
    load_plugin,
    parameter_count,
)
from torchscale.rank.models.bert import BERT_BASE, BERT_LARGE, BertModel

DEFAULT_PARAMETERS = BUILTIN["transformer"].measured.parameters
REPO_ROOT = Path(__file__).resolve().parents[2]
META = torch.device("meta")

# /work/shared/reference/models.md (torchvision 0.28, HF transformers 4.57)
REFERENCE_PARAMETERS = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "vit-b16": 86_567_656,
    "bert-base": 109_514_298,  # BertForMaskedLM
    "bert-large": 335_174_458,  # BertForMaskedLM
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
}
TINY_PARAMETERS = {
    "tiny-mlp": 22_026,
    "tiny-cnn": 78_042,
    "tiny-gpt2": 182_016,
    "tiny-bert": 187_456,
    "tiny-transformer": 299_776,
}
TINY = sorted(TINY_PARAMETERS)

# a valid value for every option name the catalog allows (small, so building is cheap)
OPTION_VALUES: dict[str, Any] = {
    "image_size": 64,
    "num_classes": 7,
    "seq_len": 32,
    "hidden": 16,
    "layers": 1,
    "d_model": 32,
    "nhead": 2,
    "num_encoder_layers": 1,
    "num_decoder_layers": 1,
    "dim_feedforward": 64,
    "dropout": 0.0,
    "vocab_size": 100,
    "pad_vocab_to": 128,
    "faithful": False,
}


def meta_build(name: str, options: dict[str, Any] | None = None, **kw: Any) -> ModelBundle:
    with torch.device("meta"):
        return build_model(name, options, **kw)


def gflops(bundle: ModelBundle, batch: int = 1) -> float:
    """Forward FLOPs on the meta device: exact shapes, no memory, attention counted too."""
    inputs, _ = bundle.make_batch(batch, META)
    with FlopCounterMode(display=False) as counter:
        call_model(bundle.model, inputs)
    return counter.get_total_flops() / 1e9


# ---------------------------------------------------------------- exact parameter counts


@pytest.mark.parametrize("name", sorted(REFERENCE_PARAMETERS))
def test_builtin_parameter_count_matches_reference(name: str) -> None:
    """The published counts are the models as published: GPT-2s and BERTs with
    `faithful: true`."""
    options = {"faithful": True} if name in WORKLOAD_MODELS else None
    assert parameter_count(meta_build(name, options).model) == REFERENCE_PARAMETERS[name]


@pytest.mark.parametrize(
    ("name", "extra"),
    [("gpt2", 47 * 768), ("gpt2-medium", 47 * 1024), ("bert-base", 6 * 768 + 6)],
)
def test_the_padded_vocabulary_adds_rows_to_a_multiple_of_64(name: str, extra: int) -> None:
    """GPT-2's 50,257 tokens padded to 50,304 rows: 47 more per hidden unit; BERT's 30,522 to
    30,528: 6 more, and 6 entries of the MLM decoder's bias."""
    count = parameter_count(meta_build(name).model)
    assert count == REFERENCE_PARAMETERS[name] + extra
    assert f"{count:,}" in BUILTIN[name].description
    assert f"{REFERENCE_PARAMETERS[name]:,}" in BUILTIN[name].description


@pytest.mark.parametrize(("cfg", "expected"), [(BERT_BASE, 109_482_240), (BERT_LARGE, 335_141_888)])
def test_bare_bert_with_pooler_matches_reference(cfg: Any, expected: int) -> None:
    with torch.device("meta"):
        model = BertModel(cfg)
    assert parameter_count(model) == expected


def test_transformer_default_is_about_3_5m() -> None:
    count = parameter_count(meta_build("transformer").model)
    assert count == DEFAULT_PARAMETERS == 3_494_400
    assert 3_300_000 <= count <= 3_700_000


@pytest.mark.parametrize("name", TINY)
def test_tiny_parameter_counts(name: str) -> None:
    count = parameter_count(meta_build(name).model)
    assert count == TINY_PARAMETERS[name]
    assert count < 300_000


@pytest.mark.parametrize(("name", "vocab"), [("gpt2", 50304), ("bert-base", 30528)])
def test_output_head_is_tied_to_the_embedding(name: str, vocab: int) -> None:
    model = meta_build(name).model
    vocab_matrices = [n for n, p in model.named_parameters() if p.ndim == 2 and vocab in p.shape]
    assert len(vocab_matrices) == 1, vocab_matrices


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_description_states_the_exact_count(name: str) -> None:
    assert f"{parameter_count(meta_build(name).model):,}" in BUILTIN[name].description


# ---------------------------------------------------------------- the catalog contract


def test_registry_names_match_catalog() -> None:
    assert set(BUILTIN) == set(BUILTIN_MODELS)


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_options_match_catalog(name: str) -> None:
    assert BUILTIN[name].options == BUILTIN_MODELS[name]


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_every_catalog_option_is_accepted(name: str) -> None:
    options = {key: OPTION_VALUES[key] for key in BUILTIN_MODELS[name]}
    bundle = meta_build(name, options)
    if "seq_len" in options:
        assert bundle.tokens_per_sample == 32
    if "image_size" in options:
        assert bundle.input_shape == (3, 64, 64)
    if "num_classes" in options:
        inputs, _ = bundle.make_batch(2, META)
        assert call_model(bundle.model, inputs).shape == (2, 7)


def test_options_change_the_architecture() -> None:
    assert parameter_count(meta_build("tiny-mlp", {"hidden": 16, "layers": 1}).model) == (
        32 * 16 + 16 + 16 * 10 + 10
    )
    small = meta_build("transformer", {"num_encoder_layers": 1, "num_decoder_layers": 1})
    assert parameter_count(small.model) < DEFAULT_PARAMETERS


def test_unknown_model_lists_what_exists() -> None:
    with pytest.raises(ModelError) as err:
        build_model("resnet51")
    message = str(err.value)
    assert "resnet51" in message and "did you mean 'resnet50'" in message
    assert all(name in message for name in BUILTIN)
    assert isinstance(err.value, TorchScaleError)


def test_unknown_option_is_refused() -> None:
    with pytest.raises(
        ModelError,
        match=r"does not take option\(s\) d_model; it takes: dropout, faithful, pad_vocab_to, "
        r"seq_len",
    ):
        build_model("gpt2", {"d_model": 64})


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("gpt2", {"seq_len": 2048}, "seq_len' = 2048 exceeds 1024"),
        ("tiny-bert", {"seq_len": 0}, "positive integer"),
        ("tiny-mlp", {"layers": 1.5}, "positive integer"),
        ("tiny-mlp", {"hidden": True}, "positive integer"),
        ("tiny-transformer", {"dropout": 1.5}, r"number in \[0, 1\)"),
        ("tiny-transformer", {"d_model": 30, "nhead": 4}, "multiple of 4"),
        ("vit-b16", {"image_size": 100}, "multiple of 16"),
    ],
)
def test_bad_option_values(name: str, options: dict[str, Any], match: str) -> None:
    with pytest.raises(ModelError, match=match):
        meta_build(name, options)


def test_data_settings_apply_where_accepted_and_options_win() -> None:
    assert meta_build("tiny-gpt2", seq_len=16).tokens_per_sample == 16
    assert meta_build("tiny-gpt2", {"seq_len": 8}, seq_len=16).tokens_per_sample == 8
    assert meta_build("tiny-cnn", image_size=48).input_shape == (3, 48, 48)
    # models without the option ignore the config-wide setting
    assert meta_build("tiny-mlp", seq_len=16, image_size=48).input_shape == (32,)
    assert meta_build("tiny-cnn", seq_len=16).tokens_per_sample is None


def test_list_rows() -> None:
    rows = {row["name"]: row for row in listing_rows()}
    assert set(rows) == set(BUILTIN)
    assert rows["gpt2"]["parameters"] == REFERENCE_PARAMETERS["gpt2"] + 47 * 768  # padded
    assert rows["gpt2"]["tokens_per_sample"] == 1024
    assert rows["resnet50"]["input_shape"] == (3, 224, 224)
    assert rows["resnet50"]["tokens_per_sample"] is None
    assert rows["bert-base"]["input_shape"] == (128,)
    assert rows["transformer"]["parameters"] == DEFAULT_PARAMETERS


def test_kinds_and_conv_flags() -> None:
    assert meta_build("resnet50").conv_net and meta_build("tiny-cnn").conv_net
    assert not meta_build("vit-b16").conv_net
    assert meta_build("vit-b16").kind == "vision"
    assert meta_build("tiny-mlp").kind == "other"
    for name in ("bert-base", "gpt2", "transformer", "tiny-gpt2", "tiny-bert"):
        assert meta_build(name).kind == "language"


# ---------------------------------------------------------------- training the tiny models


@pytest.mark.parametrize("name", TINY)
def test_tiny_model_trains_on_cpu(name: str) -> None:
    torch.manual_seed(0)
    bundle = build_model(name)
    before = {n: p.detach().clone() for n, p in bundle.model.named_parameters()}
    optimizer = torch.optim.AdamW(bundle.model.parameters(), lr=1e-2)
    inputs, targets = bundle.make_batch(4, torch.device("cpu"))
    loss = bundle.step_loss(inputs, targets)
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    # every parameter takes part in the loss: DDP needs no find_unused_parameters
    assert all(p.grad is not None for p in bundle.model.parameters())
    optimizer.step()
    changed = [n for n, p in bundle.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) >= len(before) - 1  # bert: the unused token-type row has zero grad
    if bundle.kind == "language":
        assert bundle.tokens_per_sample == BUILTIN[name].defaults["seq_len"]
        first = inputs[0] if isinstance(inputs, tuple) else inputs
        assert first.shape == (4, bundle.tokens_per_sample)
    else:
        assert bundle.tokens_per_sample is None


def test_gpt2_attention_is_causal() -> None:
    torch.manual_seed(0)
    model = build_model("tiny-gpt2").model.eval()
    tokens = torch.randint(0, 1024, (1, 16))
    changed = tokens.clone()
    changed[0, 10:] = (changed[0, 10:] + 1) % 1024
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.allclose(a[0, :10], b[0, :10], atol=1e-5)
    assert not torch.allclose(a[0, 10:], b[0, 10:])


def test_bert_mlm_has_no_pooler() -> None:
    names = [n for n, _ in build_model("tiny-bert").model.named_parameters()]
    assert not any("pooler" in n for n in names)


# ---------------------------------------------------------------- FLOPs (reference values)


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("resnet50", {}, 8.178),
        ("resnet18", {}, 3.628),
        ("vit-b16", {}, 35.13),
        ("gpt2", {"seq_len": 1024}, 291.65),
    ],
)
def test_forward_flops_match_reference(name: str, options: dict[str, Any], expected: float) -> None:
    assert gflops(meta_build(name, options)) == pytest.approx(expected, rel=0.005)


def test_bert_base_encoder_flops_match_reference() -> None:
    with torch.device("meta"):
        model = BertModel(BERT_BASE, add_pooling_layer=False)
    with FlopCounterMode(display=False) as counter:
        model(torch.randint(0, 30522, (1, 128), device=META))
    assert counter.get_total_flops() / 1e9 == pytest.approx(22.35, rel=0.005)


@pytest.mark.slow  # over 2 s on 2 cores
def test_resnet50_flops_on_real_cpu_tensors() -> None:
    torch.manual_seed(0)
    bundle = build_model("resnet50")
    inputs, _ = bundle.make_batch(1, torch.device("cpu"))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        bundle.model(inputs)
    assert counter.get_total_flops() / 1e9 == pytest.approx(8.178, rel=0.005)


# ---------------------------------------------------------------- plug-ins


@pytest.fixture()
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make `tests.plugin_models` importable however pytest was started."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    yield


@pytest.mark.usefixtures("importable_tests")
def test_plugin_tuple_is_wrapped_and_trains() -> None:
    bundle = build_model("tests.plugin_models:factory", {"hidden": 4})
    assert bundle.kind == "other" and bundle.tokens_per_sample is None
    assert bundle.input_shape == () and not bundle.conv_net
    assert parameter_count(bundle.model) == 4 * 4 + 4 + 4 + 1
    inputs, targets = bundle.make_batch(3, torch.device("cpu"))
    loss = bundle.step_loss(inputs, targets)
    loss.backward()
    assert torch.isfinite(loss)


@pytest.mark.usefixtures("importable_tests")
def test_plugin_bundle_is_kept() -> None:
    bundle = load_plugin("tests.plugin_models:bundle_factory", {"seq_len": 8})
    assert bundle.kind == "language" and bundle.tokens_per_sample == 8


@pytest.mark.usefixtures("importable_tests")
@pytest.mark.parametrize(
    ("spec", "options", "match"),
    [
        ("no_such_pkg_xyz.models:factory", {}, "module 'no_such_pkg_xyz.models' not found"),
        ("tests.no_such_module:factory", {}, "module 'tests.no_such_module' not found"),
        ("tests.plugin_models:missing", {}, "has no 'missing'"),
        ("tests.plugin_models:NOT_CALLABLE", {}, "is a int, not a callable"),
        ("tests.plugin_models:returns_pair", {}, "tuple of 2 items; expected a ModelBundle"),
        ("tests.plugin_models:returns_non_module", {}, "not a torch.nn.Module"),
        ("tests.plugin_models:raises", {}, "factory failed: RuntimeError: no GPU here"),
        ("tests.plugin_models:factory", {"depth": 2}, "factory failed: TypeError"),
        ("not a spec", {}, "not of the form 'package.module:factory'"),
    ],
)
def test_bad_plugins_give_one_line_errors(spec: str, options: dict[str, Any], match: str) -> None:
    with pytest.raises(ModelError, match=match) as err:
        load_plugin(spec, options)
    assert "\n" not in str(err.value)


def test_plugin_whose_own_import_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_plugin_mod.py").write_text("import not_installed_dep_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModelError, match="importing 'broken_plugin_mod' failed") as err:
        load_plugin("broken_plugin_mod:factory", {})
    assert "not_installed_dep_xyz" in str(err.value)


# ---------------------------------------------------------------- calling convention


def test_call_model_unpacks_tuples_and_mappings() -> None:
    class Echo(torch.nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            return args, kwargs

    echo = Echo()
    assert call_model(echo, (1, 2)) == ((1, 2), {})
    assert call_model(echo, {"a": 1}) == ((), {"a": 1})
    assert call_model(echo, 5) == ((5,), {})


def test_fsdp_units_keep_tied_weights_in_the_root_unit() -> None:
    from torchscale.rank.worker.trainer import fsdp_units

    with torch.device("meta"):
        model = build_model("tiny-gpt2").model
    units = fsdp_units(model)
    assert units, "transformer blocks are FSDP units"
    unit_params = {id(p) for unit in units for p in unit.parameters()}
    tied = [p for p in model.parameters() if p.dim() == 2 and p.shape[0] > 1000]  # embedding
    assert tied and all(id(p) not in unit_params for p in tied)


def _dropouts(model: torch.nn.Module) -> set[float]:
    rates = {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}
    return rates | {m.attn_dropout for m in model.modules() if hasattr(m, "attn_dropout")}


def test_gpt2_trains_without_dropout_unless_a_config_sets_the_published_rate() -> None:
    """Speed references train GPT-2 with no dropout, so the zoo does by default;
    `dropout: 0.1` is GPT-2 as published. Same weights, same function in eval mode."""
    torch.manual_seed(0)
    fast = build_model("tiny-gpt2")
    published = build_model("tiny-gpt2", {"dropout": 0.1})
    assert _dropouts(fast.model) == {0.0} and _dropouts(published.model) == {0.1}
    published.model.load_state_dict(fast.model.state_dict())
    inputs, _ = fast.make_batch(2, torch.device("cpu"))
    fast.model.train()
    published.model.train()
    assert torch.equal(fast.model(inputs), fast.model(inputs))  # no mask: deterministic
    assert not torch.equal(published.model(inputs), published.model(inputs))
    fast.model.eval()
    published.model.eval()
    assert torch.equal(fast.model(inputs), published.model(inputs))
    with pytest.raises(ModelError, match=r"number in \[0, 1\)"):
        build_model("gpt2", {"dropout": 1.0})


def _tied_pair(seq_len: int = 16) -> tuple[ModelBundle, ModelBundle]:
    """gpt2's shapes cut to one small layer: the published vocabulary (50,257, unpadded) and
    the zoo's (50,304 rows), the padded one holding the unpadded one's weights."""
    from dataclasses import replace

    from torchscale.rank.models import gpt2

    small = replace(gpt2.GPT2_SMALL, hidden=32, layers=1, heads=2, max_positions=seq_len)
    torch.manual_seed(0)
    published = gpt2.gpt2_lm("gpt2", small, seq_len, faithful=True)
    padded = gpt2.gpt2_lm("gpt2", small, seq_len, dropout=0.1)
    state = published.model.state_dict()
    rows = padded.model.wte.weight.shape[0]
    assert rows == 50304 and state["wte.weight"].shape[0] == 50257
    extra = padded.model.state_dict()["wte.weight"][50257:]
    state["wte.weight"] = torch.cat([state["wte.weight"], extra])
    padded.model.load_state_dict(state)
    return published, padded


def test_padding_the_vocabulary_leaves_the_loss_and_real_gradients_unchanged() -> None:
    """The pad logits never reach the loss, so the padded model trains the
    published one: same loss, same gradient on every real weight, none on the pad rows."""
    published, padded = _tied_pair()
    torch.manual_seed(1)
    inputs, targets = published.make_batch(3, torch.device("cpu"))
    losses = []
    for bundle in (published, padded):
        bundle.model.eval()  # dropout off in both: the same function
        loss = bundle.loss_fn(bundle.model(inputs), targets)
        loss.backward()
        losses.append(loss)
    assert padded.model(inputs).shape[-1] == 50304
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=1e-6)
    grads = {n: p.grad for n, p in published.model.named_parameters()}
    for name, param in padded.model.named_parameters():
        assert param.grad is not None
        if name == "wte.weight":
            torch.testing.assert_close(param.grad[:50257], grads[name], rtol=1e-5, atol=1e-7)
            assert not param.grad[50257:].any(), "the pad rows get no gradient"
        else:
            torch.testing.assert_close(param.grad, grads[name], rtol=1e-5, atol=1e-7)


def test_faithful_is_gpt2_as_published_and_refuses_what_it_fixes() -> None:
    """`faithful: true` sets dropout 0.1 and no padding; naming either beside it is an error
    in the config (one line) and in the builder."""
    from torchscale.contracts.catalog import workload_options
    from torchscale.contracts.cell_settings import ModelSpec

    with torch.device("meta"):
        model = build_model("tiny-gpt2", {"faithful": True}).model
    assert _dropouts(model) == {0.1}
    assert workload_options("gpt2", {}) == {"dropout": 0.0, "pad_vocab_to": 64}
    assert workload_options("bert-large", {}) == {"dropout": 0.0, "pad_vocab_to": 64}
    assert workload_options("gpt2", {"faithful": True, "seq_len": 8}) == {
        "dropout": 0.1,
        "pad_vocab_to": 1,
        "seq_len": 8,
    }
    assert workload_options("resnet50", {"image_size": 64}) == {"image_size": 64}
    with pytest.raises(ValueError, match=r"faithful: true is the model as published.*drop dropout"):
        ModelSpec(name="gpt2", options={"faithful": True, "dropout": 0.0})
    with pytest.raises(ModelError, match="drop pad_vocab_to or faithful"):
        build_model("gpt2", {"faithful": True, "pad_vocab_to": 128})
    with pytest.raises(ModelError, match="must be true or false"):
        build_model("gpt2", {"faithful": 1})


def test_bert_padded_keeps_the_masked_lm_loss_and_real_gradients() -> None:
    """BERT's padded word embedding, tied decoder and decoder bias: the masked-LM loss and the
    real rows' gradients are the published model's; the pad rows and bias entries get none."""
    from dataclasses import replace

    from torchscale.rank.models import bert

    small = replace(bert.BERT_BASE, hidden=32, layers=1, heads=2, intermediate=64)
    torch.manual_seed(0)
    published = bert.bert_mlm("bert-base", small, 16, faithful=True)
    padded = bert.bert_mlm("bert-base", small, 16)
    state = published.model.state_dict()
    extra = padded.model.state_dict()
    for key in ("bert.embeddings.word.weight", "decoder_bias"):
        assert extra[key].shape[0] == 30528 and state[key].shape[0] == 30522
        state[key] = torch.cat([state[key], extra[key][30522:]])
    padded.model.load_state_dict(state)
    torch.manual_seed(1)
    inputs, targets = published.make_batch(3, torch.device("cpu"))
    losses = []
    for bundle in (published, padded):
        bundle.model.eval()
        loss = bundle.loss_fn(bundle.model(inputs), targets)
        loss.backward()
        losses.append(loss)
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=1e-6)
    grads = dict(published.model.named_parameters())
    for name, param in padded.model.named_parameters():
        assert param.grad is not None
        real = grads[name].grad
        assert real is not None
        if name in ("bert.embeddings.word.weight", "decoder_bias"):
            torch.testing.assert_close(param.grad[:30522], real, rtol=1e-5, atol=1e-7)
            assert not param.grad[30522:].any()
        else:
            torch.testing.assert_close(param.grad, real, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bf16_activations", [False, True], ids=["fp32-stream", "bf16-stream"])
def test_the_bf16_path_trains_the_fp32_model_within_bf16s_tolerance(
    bf16_activations: bool,
) -> None:
    """The zoo's GPT-2 (padded, eager blockwise loss over blocks of 10 rows) under
    bf16 autocast, its residual stream in fp32 (autocast's recipe) or in bf16
    (`training.bf16_activations`, a bf16 cell's default), computes the fp32 model's loss to
    bf16's precision and the same gradients in direction: what a bf16 cell trains is the
    model, only rounder."""
    from torchscale.rank.models.layers import set_bf16_activations
    from torchscale.rank.models.token_loss import TokenLoss

    _, padded = _tied_pair()
    padded.model.eval()
    assert set_bf16_activations(padded.model, bf16_activations) == 1
    torch.manual_seed(2)
    inputs, targets = padded.make_batch(3, torch.device("cpu"))
    blockwise = TokenLoss(50257, block_bytes=10 * 4 * 50257).eager
    results = []
    for bf16 in (False, True):
        padded.model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            loss = (blockwise if bf16 else padded.loss_fn)(padded.model(inputs), targets)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in padded.model.named_parameters()}
        results.append((loss.detach(), grads))
    (fp32_loss, fp32_grads), (bf16_loss, bf16_grads) = results
    assert bf16_loss.dtype == torch.float32
    torch.testing.assert_close(bf16_loss, fp32_loss, rtol=2**-7, atol=0)
    for name, grad in fp32_grads.items():
        cosine = F.cosine_similarity(bf16_grads[name].flatten(), grad.flatten(), dim=0)
        assert cosine > 0.99, (name, float(cosine))
    assert not bf16_grads["wte.weight"][50257:].any(), "the pad rows get no gradient"


def _stream_dtypes(bundle: ModelBundle, autocast: bool) -> set[torch.dtype]:
    """The dtypes of every transformer block's input and output and every LayerNorm's output
    in one forward of `bundle`, under bf16 autocast or not."""
    from torchscale.rank.models.layers import Block

    seen: set[torch.dtype] = set()

    def record(module: torch.nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> None:
        seen.update({args[0].dtype, out.dtype})

    for module in bundle.model.modules():
        if isinstance(module, (Block, torch.nn.LayerNorm)):
            module.register_forward_hook(record)
    inputs, _ = bundle.make_batch(2, torch.device("cpu"))
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
        bundle.model(inputs)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-bert", "vit-b16"])
def test_bf16_activations_carry_the_residual_stream_in_bf16_only_when_asked(name: str) -> None:
    """With bf16 activations on, under bf16 autocast, every block's input and
    output and every LayerNorm's output is bf16 (autocast alone leaves them fp32: the fp32
    embeddings start the stream and LayerNorm autocasts to fp32); outside autocast the
    setting changes nothing; the parameters stay fp32 either way."""
    from torchscale.rank.models.layers import set_bf16_activations

    options = {"image_size": 32} if name == "vit-b16" else None
    bundle = build_model(name, options)
    bundle.model.eval()
    assert torch.float32 in _stream_dtypes(bundle, autocast=True), "autocast's own recipe"
    assert set_bf16_activations(bundle.model, True) == 1
    assert _stream_dtypes(bundle, autocast=True) == {torch.bfloat16}
    assert _stream_dtypes(bundle, autocast=False) == {torch.float32}
    assert {p.dtype for p in bundle.model.parameters()} == {torch.float32}


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_bf16_stream_models_are_the_models_with_torchscales_residual_stream(name: str) -> None:
    """training_defaults.BF16_STREAM_MODELS (where `training.bf16_activations` enters a cell's
    definition) is exactly the built-in models that `set_bf16_activations` reaches: a model
    left out would train an fp32 stream while its cell said bf16, one listed wrongly would
    move its cell's id for nothing."""
    from torchscale.contracts.training_defaults import BF16_STREAM_MODELS
    from torchscale.rank.models.layers import set_bf16_activations

    bundle = meta_build(name, None)
    assert (set_bf16_activations(bundle.model, True) > 0) == (name in BF16_STREAM_MODELS)


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_the_plans_model_facts_are_the_models_own(name: str) -> None:
    """training_defaults decides channels_last and the loss for a cell's definition without
    building the model: its CONV_NETS and BLOCKWISE_LOSS_MODELS must be exactly the built-ins
    whose bundle convolves and carries the blockwise token loss, or a cell's id would say one
    thing and its rank train another."""
    from torchscale.contracts.training_defaults import BLOCKWISE_LOSS_MODELS, CONV_NETS

    bundle = meta_build(name, None)
    assert bundle.conv_net == (name in CONV_NETS)
    assert (bundle.eager_loss_fn is not None) == (name in BLOCKWISE_LOSS_MODELS)
