"""The worker's GPU-only paths, exercised on CPU where the mechanism allows.

One H100 has run torchscale's cells at world size 1 (docs/measured.md), no multi-GPU node has, and
CI has no GPU, so each GPU bug found by reading gets a CPU test of its mechanism: channels_last
weights under FSDP (forced on CPU), the peak chosen for MFU (fake device names), DDP no_sync()
through torch.compile's wrapper (compiled lazily, never run), the FLOP count on the meta device (the
same figure, no memory), FSDP's mesh when torch believes there is an accelerator, the memory peaks'
place in the protocol, and the bf16 FSDP mixed-precision policy. Each test that needs
torch.distributed gets its own 1-rank gloo group on a FileStore, destroyed afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import Peak, Tf32Settings, cell_peak, peak_tflops
from torchscale.contracts.wording import say
from torchscale.contracts.wording.cell_reasons import peak_basis
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.rank.models import call_model
from torchscale.rank.worker import measure as measure_module
from torchscale.rank.worker import trainer as trainer_module
from torchscale.rank.worker.measure import Window, count_flops, measure
from torchscale.rank.worker.tf32_settings import read_tf32_settings
from torchscale.rank.worker.trainer import Trainer, batch_norms, ddp_module, eager_module

H100 = "NVIDIA H100 80GB HBM3"
TF32_DEFAULTS = Tf32Settings(  # torch's defaults: cuDNN may use TF32, cuBLAS may not
    matmul=False,
    conv=True,
    matmul_source="torch.backends.cuda.matmul.allow_tf32=False",
    conv_source="torch.backends.cudnn.allow_tf32=True",
)


@pytest.fixture()
def process_group(tmp_path: Path) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun would give a world-size-1 cell."""
    store = f"file://{tmp_path / 'store'}"  # a FileStore
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def make_spec(
    model: str = "tiny-mlp",
    strategy: str = "ddp",
    precision: str = "fp32",
    device: str = "cpu",
    **training: Any,
) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model=model,
            label=model,
            batch_size=4,
            world_size=1,
            precision=precision,  # type: ignore[arg-type]
            strategy=strategy,  # type: ignore[arg-type]
            device=device,  # type: ignore[arg-type]
            backend="gloo" if device == "cpu" else "nccl",
        ),
        model=ModelSpec(name=model),
        training=TrainingConfig(**training),
        measurement=MeasurementConfig(steps=2, repeats=1, warmup_steps=0),
        data=DataConfig(),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


def build(**spec: Any) -> Trainer:
    return Trainer.build(make_spec(**spec), torch.device("cpu"))


def local(tensor: torch.Tensor) -> torch.Tensor:
    """An FSDP2 parameter's local shard (a plain tensor as is)."""
    to_local = getattr(tensor, "to_local", None)
    return to_local() if to_local is not None else tensor


# ------------------------------------------------------------------ 1. channels_last x FSDP


@pytest.mark.slow
@pytest.mark.usefixtures("process_group")
def test_channels_last_under_fsdp_keeps_weights_contiguous_and_inputs_channels_last() -> None:
    trainer = build(model="tiny-cnn", strategy="fsdp", channels_last=True)  # raised before
    outputs: list[torch.Tensor] = []
    first_conv = next(m for m in trainer.model.modules() if isinstance(m, torch.nn.Conv2d))
    first_conv.register_forward_hook(lambda _m, _a, out: outputs.append(out))
    trainer.step()
    trainer.step()
    assert all(local(p).is_contiguous() for p in trainer.model.parameters())
    assert trainer.channels_last
    assert trainer.inputs.is_contiguous(memory_format=torch.channels_last)
    # contiguous weights do not turn the convolutions back to NCHW: the input decides
    assert outputs[0].is_contiguous(memory_format=torch.channels_last)
    assert trainer.settings["channels_last_weights"] is False


@pytest.mark.usefixtures("process_group")
def test_channels_last_under_ddp_still_converts_the_weights() -> None:
    trainer = build(model="tiny-cnn", strategy="ddp", channels_last=True)
    kernels = [p for p in trainer.model.parameters() if p.dim() == 4 and p.shape[-1] == 3]
    assert kernels
    assert all(k.is_contiguous(memory_format=torch.channels_last) for k in kernels)
    assert not any(k.is_contiguous() for k in kernels)
    assert trainer.settings["channels_last_weights"] is True


# ------------------------------------------------------------------ 2. and 4. the peak for MFU


def words(peak: Peak) -> str:
    """The peak's basis as the report says it, with the peak it names."""
    return peak_basis(peak.basis, peak.tflops) or ""


@pytest.mark.parametrize(
    ("conv_net", "tf32", "expected", "basis_has"),
    [
        # conv net, torch defaults: cuDNN convolutions may use TF32 -> TF32 peak
        (True, TF32_DEFAULTS, 494.0, "cuDNN convolutions may use TF32"),
        # same defaults, a matmul model: cuBLAS decides, and TF32 is off there
        (False, TF32_DEFAULTS, 67.0, "no TF32"),
        (False, Tf32Settings(True, False, "m=True", "c=False"), 494.0, "cuBLAS matmuls"),
        (True, Tf32Settings(False, False, "m=False", "c=False"), 67.0, "no TF32"),
        # a conv net's head is a matmul: TF32 there may run part of its FLOPs on TF32 units
        (True, Tf32Settings(True, False, "m=True", "c=False"), 494.0, "cuBLAS matmuls"),
    ],
)
def test_fp32_peak_follows_what_runs_the_flops(
    conv_net: bool, tf32: Tf32Settings, expected: float, basis_has: str
) -> None:
    peak = cell_peak(H100, "fp32", conv_net, tf32)
    assert peak.tflops == expected
    assert peak.note is None
    assert peak.basis is not None
    assert words(peak).startswith(f"{H100} (as H100 SXM): ")  # the table row it read as
    assert f"dense peak {expected:g} TFLOP/s" in words(peak)
    assert basis_has in words(peak)


def test_default_conv_net_basis_names_the_cudnn_setting() -> None:
    peak = cell_peak(H100, "fp32", True, TF32_DEFAULTS)
    assert words(peak) == (
        f"{H100} (as H100 SXM): tf32 dense peak 494 TFLOP/s "
        "(cuDNN convolutions may use TF32: torch.backends.cudnn.allow_tf32=True)"
    )


def test_unreadable_tf32_setting_gives_no_peak() -> None:
    tf32 = Tf32Settings(False, None, "m=False", "torch.backends.cudnn.allow_tf32")
    peak = cell_peak(H100, "fp32", True, tf32)
    assert peak.tflops is None
    assert peak.basis is None
    assert peak.note == Finding(
        code="peak.tf32_unknown", figures={"unreadable": ["torch.backends.cudnn.allow_tf32"]}
    )
    assert "torch.backends.cudnn.allow_tf32" in say(peak.note)
    # a matmul model does not depend on the cuDNN setting
    assert cell_peak(H100, "fp32", False, tf32).tflops == 67.0


@pytest.mark.parametrize(("precision", "expected"), [("bf16", 989.0), ("amp", 989.0)])
def test_16_bit_peak_ignores_tf32(precision: str, expected: float) -> None:
    for tf32 in (TF32_DEFAULTS, Tf32Settings(None, None, "m", "c")):
        peak = cell_peak(H100, precision, True, tf32)
        assert peak.tflops == expected
        assert peak.basis is not None
        assert "TF32" not in words(peak)


def test_v100_fp32_with_tf32_allowed_uses_the_fp32_peak_and_says_why() -> None:
    peak = cell_peak("Tesla V100-SXM2-32GB", "fp32", True, TF32_DEFAULTS)
    assert peak.tflops == 15.7
    assert peak.basis is not None
    assert "fp32 dense peak" in words(peak)
    assert "no TF32 units" in words(peak)


@pytest.mark.parametrize(
    ("name", "precision", "tf32", "expected"),
    [
        ("NVIDIA H200 NVL", "bf16", False, 835.5),  # datasheet 1,671 with sparsity
        ("NVIDIA H200 NVL", "fp32", True, 417.5),
        ("NVIDIA H200 NVL", "fp32", False, 60.0),
        ("NVIDIA H200", "bf16", False, 989.0),  # SXM
        ("NVIDIA H100 NVL", "bf16", False, 835.5),
    ],
)
def test_nvl_variants_have_their_own_peaks(
    name: str, precision: str, tf32: bool, expected: float
) -> None:
    assert peak_tflops(name, precision, tf32) == (expected, None)


@pytest.mark.parametrize(
    "name", ["NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA H100 80GB HBM3 MIG 3g.40gb"]
)
@pytest.mark.parametrize("precision", ["fp32", "amp", "bf16"])
def test_mig_slice_gets_no_peak(name: str, precision: str) -> None:
    peak = cell_peak(name, precision, True, TF32_DEFAULTS)
    assert peak.tflops is None
    assert peak.basis is None
    assert peak.note == Finding(code="peak.mig_slice", figures={"device": name})
    assert "MIG" in say(peak.note) and name in say(peak.note)


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        ("NVIDIA L40", 121.0),
        ("NVIDIA RTX A1000 6GB Laptop GPU", 312.0),
        # GH200 has its own row with the H100 SXM figures (the same GPU):
        # tests/contracts/test_gpu_peaks.py; these two must still not borrow a neighbour's
        # peak
        ("NVIDIA GB200", 2250.0),  # not HGX B200's
        ("NVIDIA H20", 989.0),  # not H200's
    ],
)
def test_whole_token_matching_still_holds(name: str, wrong: float) -> None:
    assert cell_peak(name, "bf16", False, TF32_DEFAULTS).tflops != wrong


def test_read_tf32_settings_follows_the_legacy_flags() -> None:
    matmul, conv = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        read = read_tf32_settings()
        assert (read.matmul, read.conv) == (False, True)
        torch.set_float32_matmul_precision("high")  # the usual way to allow TF32 matmuls
        torch.backends.cudnn.allow_tf32 = False
        read = read_tf32_settings()
        assert (read.matmul, read.conv) == (True, False)
        assert read.conv_source == "torch.backends.cudnn.allow_tf32=False"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = conv


@pytest.mark.slow
def test_read_tf32_settings_follows_the_new_api() -> None:
    """In a fresh process: after the new API is used, reading the legacy flag raises."""
    script = (
        "import json, torch\n"
        "from torchscale.rank.worker.tf32_settings import read_tf32_settings\n"
        "torch.backends.cuda.matmul.fp32_precision = 'tf32'\n"
        "torch.backends.cudnn.conv.fp32_precision = 'ieee'\n"
        "r = read_tf32_settings()\n"
        "print(json.dumps([r.matmul, r.conv, r.matmul_source, r.conv_source]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    matmul, conv, matmul_source, conv_source = json.loads(done.stdout.strip().splitlines()[-1])
    assert (matmul, conv) == (True, False)
    assert matmul_source == "torch.backends.cuda.matmul.fp32_precision='tf32'"
    assert conv_source == "torch.backends.cudnn.conv.fp32_precision='ieee'"


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize(
    ("model", "device_name", "peak", "basis_has"),
    [
        ("tiny-cnn", H100, 494.0, "cuDNN convolutions may use TF32"),
        ("tiny-mlp", H100, 67.0, "no TF32"),
        ("tiny-cnn", "NVIDIA A100-SXM4-40GB MIG 1g.5gb", None, None),
    ],
)
def test_facts_on_a_fake_cuda_device(
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    device_name: str,
    peak: float | None,
    basis_has: str | None,
) -> None:
    from torchscale.rank.worker.main import _facts

    spec = make_spec(model=model)
    trainer = Trainer.build(spec, torch.device("cpu"))
    trainer.device = torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda _device=None: device_name)
    matmul, conv = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        facts = _facts(spec, trainer)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = conv
    assert facts.device_name == device_name
    assert facts.peak_tflops == peak
    if basis_has is None:
        assert facts.peak_basis is None
        assert facts.peak_note is not None
        assert facts.peak_note.code == "peak.mig_slice"
    else:
        assert facts.peak_note is None
        assert facts.peak_basis is not None
        assert basis_has in (peak_basis(facts.peak_basis, facts.peak_tflops) or "")
    env = facts.environment
    for key in ("cudnn_benchmark", "tf32", "fsdp_mixed_precision", "channels_last_weights"):
        assert key in env
    # torch 2.13 reports the (default) TF32 convolutions through its new API; older, the flag
    assert env["tf32"]["conv"] in (
        "torch.backends.cudnn.conv.fp32_precision='tf32'",
        "torch.backends.cudnn.allow_tf32=True",
    )


# ------------------------------------------------------------------ 5. cudnn.benchmark


def test_cuda_device_turns_cudnn_benchmark_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cell's device, readied before the group is joined: on CUDA cuDNN autotuning on and
    the context's cost timed; on CPU neither (and the reason recorded)."""
    from torchscale.rank.worker import main as worker_main

    for name in ("set_device", "init", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, lambda _device=None: None)
    monkeypatch.setattr(torch, "empty", lambda *args, **kwargs: None)
    monkeypatch.setattr(worker_main, "bind_cpu_rank", lambda: None)
    monkeypatch.setenv("LOCAL_RANK", "0")
    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = False
        cpu = worker_main.CellRun(make_spec(device="cpu"))
        assert cpu.ready("cpu") == torch.device("cpu")
        assert torch.backends.cudnn.benchmark is False  # untouched on CPU
        assert cpu.costs.device_init_s is None
        assert cpu.costs.notes["device_init_s"] == worker_main.CPU_DEVICE_INIT
        cuda = worker_main.CellRun(make_spec(device="cuda"))
        assert cuda.ready("cuda") == torch.device("cuda", 0)
        assert torch.backends.cudnn.benchmark is True
        assert cuda.costs.device_init_s is not None
    finally:
        torch.backends.cudnn.benchmark = before


# ------------------------------------------------------------------ 3. and 9. torch.compile


@pytest.fixture
def ddp_at_one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """DDP on the 1-rank group, as at any world size (a lone rank trains unwrapped)."""
    monkeypatch.setattr(trainer_module, "has_peers", lambda: True)


@pytest.mark.usefixtures("process_group")
def test_a_lone_rank_trains_unwrapped_and_says_so() -> None:
    """World size 1: no DDP (no peer to average with); the step and no_sync still work."""
    trainer = build(grad_accum_steps=2)
    assert not isinstance(eager_module(trainer.model), DistributedDataParallel)
    assert ddp_module(trainer.model) is None
    assert trainer.settings["ddp_wrapper"] == trainer_module.NO_DDP_AT_ONE_RANK
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.step(skip_gradient_sync=True)
    after = list(trainer.model.parameters())
    assert any(not torch.equal(a, p) for a, p in zip(before, after, strict=True))


@pytest.mark.usefixtures("process_group")
def test_compile_compiles_the_loss_beside_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loss runs outside the model's graph, so the trainer compiles it too
    (inductor fuses cross entropy's fp32 upcast and log-softmax); an uncompiled cell trains
    with the loss's eager form (the token loss a block at a time:
    tests/rank/test_token_loss.py). torch.compile is recorded, not run."""
    compiled: list[Any] = []

    def record(fn: Any) -> Any:
        compiled.append(fn)
        return fn

    monkeypatch.setattr(torch, "compile", record)
    eager = build(model="tiny-gpt2")
    assert eager.loss_fn == eager.bundle.eager_loss_fn and not compiled
    assert eager.settings["loss"] == "blockwise"
    mlp = build(model="tiny-mlp")  # no eager form: its own loss
    assert mlp.loss_fn is mlp.bundle.loss_fn
    assert mlp.settings["loss"] == "plain"
    trainer = build(model="tiny-gpt2", compile=True)
    assert compiled[-1] is trainer.bundle.loss_fn  # the model first, then its loss
    assert trainer.settings["loss"] == "compiled"
    calls: list[str] = []
    monkeypatch.setattr(
        trainer, "loss_fn", lambda *a: calls.append("compiled") or trainer.bundle.loss_fn(*a)
    )
    trainer.step()
    assert calls == ["compiled"]


@pytest.mark.usefixtures("process_group", "ddp_at_one_rank")
@pytest.mark.slow  # over 2 s on 2 cores
def test_the_blockwise_loss_trains_the_step_the_plain_loss_does() -> None:
    """Through DDP's hooks and two accumulated micro-batches, a step with the eager blockwise
    loss (small blocks, so the tiny vocabulary spans several) moves every weight as the plain
    cross entropy does."""
    from torchscale.rank.models.token_loss import TokenLoss

    gradients: list[dict[int, torch.Tensor]] = []
    for blockwise in (False, True):
        trainer = build(model="tiny-gpt2", grad_accum_steps=2)
        loss = trainer.bundle.loss_fn
        assert isinstance(loss, TokenLoss) and loss.vocab_size is not None
        small = TokenLoss(loss.vocab_size, block_bytes=37 * 4 * loss.vocab_size)
        trainer.loss_fn = small.eager if blockwise else small
        seen: dict[int, torch.Tensor] = {}  # each weight's gradient once both micro-batches
        for index, param in enumerate(eager_module(trainer.model).parameters()):
            param.register_post_accumulate_grad_hook(
                lambda p, i=index, into=seen: into.__setitem__(i, p.grad.detach().clone())
            )
        trainer.step()
        gradients.append(seen)
    plain, blockwise = gradients
    assert plain.keys() == blockwise.keys() and len(plain) > 10
    for index, gradient in plain.items():  # Adam would hide a scale: the gradients, not steps
        torch.testing.assert_close(blockwise[index], gradient, rtol=1e-5, atol=1e-7)


@pytest.mark.usefixtures("process_group", "ddp_at_one_rank")
def test_no_sync_reaches_ddp_through_the_compiled_wrapper() -> None:
    trainer = build(compile=True, grad_accum_steps=2)  # compiled lazily: nothing runs here
    assert not isinstance(trainer.model, DistributedDataParallel)  # the bug's precondition
    ddp = ddp_module(trainer.model)
    assert isinstance(ddp, DistributedDataParallel)
    assert ddp is eager_module(trainer.model)
    with trainer.no_sync(True):
        assert ddp.require_backward_grad_sync is False
    assert ddp.require_backward_grad_sync is True
    with trainer.no_sync(False):
        assert ddp.require_backward_grad_sync is True


def eager_step_flops(trainer: Trainer) -> float:
    """The count on the device, the meta-device count's reference: FlopCounterMode around one
    training step of the uncompiled model with the plain loss, attention under MATH."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    assert trainer.model is eager_module(trainer.model)  # not compiled
    trainer.loss_fn = trainer.bundle.loss_fn
    counter = FlopCounterMode(display=False)
    with counter, sdpa_kernel(SDPBackend.MATH):
        trainer.step()
    return float(counter.get_total_flops())


@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize(
    ("model", "strategy", "accum"),
    [
        ("tiny-mlp", "ddp", 1),
        ("tiny-cnn", "ddp", 2),
        ("tiny-gpt2", "fsdp", 2),
        ("tiny-bert", "ddp", 1),
        ("tiny-transformer", "ddp", 1),
    ],
)
@pytest.mark.slow  # over 2 s on 2 cores
def test_the_meta_flop_count_is_the_eager_steps_count(
    model: str, strategy: str, accum: int
) -> None:
    """The FLOP count on the meta device is an eager step's count on the device, figure for
    figure (the models' stored FLOPs are the reference ones:
    tests/contracts/test_model_metadata.py)."""
    spec = make_spec(model=model, strategy=strategy, grad_accum_steps=accum)
    trainer = Trainer.build(spec, torch.device("cpu"))
    assert count_flops(spec) == (eager_step_flops(trainer), None)


@pytest.mark.usefixtures("process_group")
def test_the_flop_count_never_runs_the_cells_model() -> None:
    """Neither the compiled model nor its eager module runs: the count builds its own."""
    plain = count_flops(make_spec())
    assert plain[0] is not None and plain[0] > 0 and plain[1] is None
    compiled = build(compile=True)

    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the FLOP count ran the cell's model")

    compiled.model.forward = forbidden
    eager_module(compiled.model).forward = forbidden
    assert count_flops(compiled.spec) == plain


class RealBytes(TorchDispatchMode):
    """Bytes of the storage behind every tensor an op returns off the meta device: an upper
    bound of what the ops run inside allocate (freed tensors count too), so 0 means nothing
    was allocated at all."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for value in tree_leaves(out):
            if isinstance(value, torch.Tensor) and value.device.type != "meta":
                self.bytes += value.untyped_storage().nbytes()
        return out


@pytest.mark.usefixtures("process_group")
def test_the_flop_count_allocates_nothing_a_measured_step_does() -> None:
    """An eager step on the device holds the plain loss's fp32 logits, log-softmax and gradient
    beyond what a compiled or blockwise step holds (about 39 GB more for gpt2 bf16 at batch 64), so
    a count taken there could run out of memory where training fits. On the meta device it allocates
    no storage at all, while the cell's own step allocates its activations."""
    spec = make_spec(model="tiny-gpt2")
    trainer = Trainer.build(spec, torch.device("cpu"))
    with RealBytes() as counted:
        flops, note = count_flops(spec)
    assert flops is not None and note is None
    with RealBytes() as stepped:
        trainer.step()
    assert counted.bytes == 0 < stepped.bytes


@pytest.mark.usefixtures("process_group")
def test_a_model_the_meta_device_cannot_run_gets_no_flop_count_and_the_reason() -> None:
    flops, note = count_flops(make_spec(model="tests.plugin_models:reads_values"))
    assert flops is None
    assert isinstance(note, Finding) and note.code == "unavailable.flop_count_failed"
    assert "item" in note.figures["error"]  # the model's own error, named


# ------------------------------------------------------------------ 6. FSDP mesh on CPU


@pytest.mark.usefixtures("process_group")
def test_cpu_fsdp_shards_on_a_cpu_mesh_when_torch_sees_an_accelerator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # what a GPU node looks like to fully_shard's default mesh (which then fails here)
    monkeypatch.setattr(torch._C, "_get_accelerator", lambda: torch.device("cuda"))
    trainer = build(model="tiny-mlp", strategy="fsdp")
    trainer.step()
    meshes = {p.device_mesh.device_type for p in trainer.model.parameters()}  # type: ignore[attr-defined]
    assert meshes == {"cpu"}
    assert trainer.settings["fsdp_mesh_device"] == "cpu"


# ------------------------------------------------------------------ 7. DDP memory peaks


@pytest.mark.usefixtures("process_group")
def test_memory_peaks_are_read_before_each_no_sync_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trainer = build()
    spec = trainer.spec.model_copy(
        update={
            "measurement": MeasurementConfig(
                steps=2, repeats=2, warmup_steps=0, flops=False, comm_overhead=True
            )
        }
    )
    trainer.spec = spec
    trainer.device = torch.device("cuda", 0)  # only the protocol runs: windows are faked
    events: list[str] = []
    sampler = SimpleNamespace(report=lambda: None)  # telemetry: the training windows only

    def window(
        _trainer: Trainer,
        steps: int,
        _timing: str,
        skip_sync: bool = False,
        telemetry: Any = None,
        calibration: Any = None,
    ) -> Window:
        events.append("no_sync window" if skip_sync else "window")
        assert telemetry is (None if skip_sync else sampler)
        assert (calibration is None) == skip_sync  # timed beside the training windows only
        return Window(1.0, [0.5] * steps)

    def stats(_device: Any = None) -> dict[str, int]:
        events.append("stats")
        return {}

    def peak(name: str) -> Any:
        def read(_device: Any = None) -> int:
            events.append(name)
            return 1

        return read

    monkeypatch.setattr(measure_module, "run_window", window)
    monkeypatch.setattr(dist, "get_world_size", lambda _group=None: 2)  # no_sync needs > 1
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda _device=None: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", peak("allocated"))
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", peak("reserved"))
    monkeypatch.setattr(torch.cuda, "memory_stats", stats)
    monkeypatch.setattr(measure_module, "rank_sampler", lambda _config, _device: sampler)
    monkeypatch.setattr(measure_module, "summarise_rank", lambda *_args: None)
    monkeypatch.setattr(measure_module, "trace_rank", lambda *_args: None)  # a real GPU's
    result = measure(trainer, "host")
    # each synchronised window's peaks are reset before it and read right after it, before
    # the no_sync window interleaved after it (which holds a second copy of the gradients)
    one_pair = ("stats", "window", "allocated", "reserved", "stats", "no_sync window")
    assert events == [*one_pair, *one_pair]
    assert result.no_sync is not None and len(result.no_sync_windows) == 2
    assert result.peak_allocated == 1


# ------------------------------------------------------------------ 8. bf16 under FSDP


@pytest.mark.usefixtures("process_group")
def test_bf16_fsdp_runs_bf16_params_with_fp32_reduction_and_fp32_batch_norm() -> None:
    from torch.distributed.fsdp import FSDPModule

    trainer = build(model="tiny-cnn", strategy="fsdp", precision="bf16")
    seen: dict[str, set[torch.dtype]] = {}
    for module in trainer.model.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.BatchNorm2d)):
            kind = "norm" if isinstance(module, torch.nn.BatchNorm2d) else "compute"
            module.register_forward_pre_hook(
                lambda m, _a, kind=kind: seen.setdefault(kind, set()).add(m.weight.dtype)
            )
    trainer.step()
    assert seen == {"compute": {torch.bfloat16}, "norm": {torch.float32}}
    norms = batch_norms(trainer.model)
    assert norms
    assert all(isinstance(n, FSDPModule) for n in norms)
    # the policy FSDP applied to each parameter (FSDP2 internals: what decides the collectives)
    groups = [
        group
        for module in trainer.model.modules()
        if isinstance(module, FSDPModule)
        for group in module._get_fsdp_state()._fsdp_param_groups
    ]
    dtypes = {(p.param_dtype, p.reduce_dtype) for group in groups for p in group.fsdp_params}
    assert dtypes == {(torch.bfloat16, torch.float32), (None, None)}  # blocks, batch norms
    # sharded parameters (what the optimizer steps) stay fp32
    assert {local(p).dtype for p in trainer.model.parameters()} == {torch.float32}
    # no autocast on top of the policy (torchtitan's way): the step's loss upcasts the bf16
    # logits itself, so it is computed in fp32 as autocast would compute it
    assert not torch.is_autocast_enabled("cpu")
    with trainer.autocast():
        assert not torch.is_autocast_enabled("cpu")
        logits = call_model(trainer.model, trainer.inputs)
        assert trainer.loss_fn is not None
        loss = trainer.loss_fn(logits, trainer.targets)
    assert logits.dtype == torch.bfloat16
    assert loss.dtype == torch.float32
    assert trainer.settings["fsdp_mixed_precision"] == {
        "param_dtype": "bfloat16",
        "reduce_dtype": "float32",
        "batchnorm_units_fp32_params": len(norms),
    }
    assert trainer.settings["autocast"] is None


@pytest.mark.usefixtures("process_group")
@pytest.mark.slow  # over 2 s on 2 cores
def test_compiled_fsdp_is_wrapped_as_torchtitan_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block is compiled before fully_shard wraps it (FSDP's hooks around the graph, not
    in it), the root is never compiled whole and is not resharded after forward (an explicit
    reshard_after_forward turns FSDP2's own root rule off), and no autocast runs on top of
    the bf16 policy. torch.compile runs with the eager backend: dynamo, not inductor."""
    import torch.distributed.fsdp as fsdp

    events: list[tuple[str, Any, Any]] = []
    real_compile, real_shard = torch.compile, fsdp.fully_shard

    def compile_(target: Any, **options: Any) -> Any:
        events.append(("compile", target, None))
        return real_compile(target, backend="eager", **options)

    def shard(module: Any, **options: Any) -> Any:
        events.append(("shard", module, options["reshard_after_forward"]))
        return real_shard(module, **options)

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(fsdp, "fully_shard", shard)
    trainer = build(model="tiny-gpt2", strategy="fsdp", precision="bf16", compile=True)
    blocks = list(trainer.model.get_submodule("blocks").children())
    assert len(blocks) >= 2
    for block in blocks:  # each block: its compiled wrapper, then sharded
        assert isinstance(block, torch._dynamo.eval_frame.OptimizedModule)
        assert isinstance(block, fsdp.FSDPModule)
        inner = block._orig_mod
        compiled = [i for i, e in enumerate(events) if e[0] == "compile" and e[1] is inner]
        sharded = [i for i, e in enumerate(events) if e[0] == "shard" and e[1] is block]
        assert len(compiled) == 1 and len(sharded) == 1 and compiled[0] < sharded[0]
    assert not isinstance(trainer.model, torch._dynamo.eval_frame.OptimizedModule)
    assert eager_module(trainer.model) is trainer.model
    root = [e for e in events if e[0] == "shard" and e[1] is trainer.model]
    assert [e[2] for e in root] == [False]
    assert {e[2] for e in events if e[0] == "shard" and e[1] is not trainer.model} == {True}
    modules = [e[1] for e in events if e[0] == "compile" and isinstance(e[1], torch.nn.Module)]
    assert len(modules) == len(blocks)  # blocks only, never the root
    assert trainer.settings["autocast"] is None
    assert trainer.settings["compile_scope"] == "per_unit"
    assert trainer.settings["fsdp_units"] == len(blocks)
    amp: list[bool] = []
    blocks[0].register_forward_pre_hook(lambda *_: amp.append(torch.is_autocast_enabled("cpu")))
    trainer.step()
    trainer.step()
    assert amp == [False, False]


@pytest.mark.usefixtures("process_group")
def test_compiled_fsdp_without_blocks_compiles_the_whole_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model with no repeated blocks (tiny-mlp) has nothing to compile one by one: the
    sharded model is compiled whole, and the result says why. Compile is recorded, not run."""
    compiled: list[Any] = []

    def record(fn: Any) -> Any:
        compiled.append(fn)
        return fn

    monkeypatch.setattr(torch, "compile", record)
    trainer = build(model="tiny-mlp", strategy="fsdp", compile=True)
    assert compiled[0] is trainer.model
    assert trainer.settings["compile_scope"] == "whole_model:no_blocks"


@pytest.mark.usefixtures("process_group")
def test_bf16_fsdp_transformer_steps_and_fp32_fsdp_has_no_policy() -> None:
    bf16 = build(model="tiny-gpt2", strategy="fsdp", precision="bf16")
    bf16.step()
    assert bf16.settings["fsdp_mixed_precision"]["param_dtype"] == "bfloat16"
    assert bf16.settings["fsdp_mixed_precision"]["batchnorm_units_fp32_params"] == 0
    fp32 = build(model="tiny-cnn", strategy="fsdp", precision="fp32")
    seen: set[torch.dtype] = set()
    for module in fp32.model.modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_pre_hook(lambda m, _a: seen.add(m.weight.dtype))
    fp32.step()
    assert seen == {torch.float32}
    assert fp32.settings["fsdp_mixed_precision"] == {
        "param_dtype": None,
        "reduce_dtype": None,
        "batchnorm_units_fp32_params": 0,
    }


@pytest.mark.usefixtures("process_group")
def test_facts_on_cpu_have_no_peak_and_no_tf32_record() -> None:
    from torchscale.rank.worker.main import _facts

    spec = make_spec(model="tiny-cnn", compile=True)
    facts = _facts(spec, Trainer.build(spec, torch.device("cpu")))
    assert facts.peak_tflops is None
    assert facts.peak_basis is None
    assert facts.peak_note is not None
    assert facts.environment["tf32"] is None
    assert facts.environment["cudnn_benchmark"] is torch.backends.cudnn.benchmark


@pytest.mark.usefixtures("process_group")
def test_the_garbage_collector_runs_at_window_edges_not_inside_steps() -> None:
    """A collection inside a measured step stalls the rank at a random point (a straggler
    and a stretch of the step in no phase): the window collects at its edge and keeps
    automatic collection off inside, then restores it (and leaves it off if it was off)."""
    import gc

    trainer = build(model="tiny-mlp")
    seen: list[bool] = []
    real_step = trainer.step

    def step(**kwargs: Any) -> None:
        seen.append(gc.isenabled())
        real_step(**kwargs)

    trainer.step = step  # type: ignore[method-assign]
    assert gc.isenabled()
    window = measure_module.run_window(trainer, 3, "perf_counter", phases=True)
    # the untimed step after the opening edge runs with collection off too
    assert seen == [False] * 4 and len(window.step_s) == 3
    assert gc.isenabled()
    gc.disable()
    try:
        measure_module.run_window(trainer, 1, "perf_counter", phases=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
