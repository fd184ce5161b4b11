"""The FLOPs of a user's step (counted by a dispatch mode that only counts) and the peak MFU
divides by, chosen from the dtype the step's FLOPs ran in (rank/own_job/step_facts.py,
orchestration/own_job/identity.job_peak)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from torchscale.contracts.gpu_peaks import peak_tflops
from torchscale.orchestration.own_job.identity import job_peak
from torchscale.rank.own_job.step_facts import StepFlops, compiled, optimizer_facts

H100 = "NVIDIA H100 80GB HBM3"
TF32_OFF = {"matmul": False, "conv": False, "matmul_source": "test", "conv_source": "test"}


def step(model: torch.nn.Module, x: torch.Tensor, autocast: bool = False) -> torch.Tensor:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = model(x).float().square().mean()
    loss.backward()
    return loss.detach()


def model_and_input() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)
    )
    return model, torch.randn(2, 3, 8, 8)


def test_the_count_is_flopcountermodes_and_the_step_is_unchanged() -> None:
    """The same total as torch's FlopCounterMode (its formulas), the convolutions' share
    apart, and a step that computes exactly what it does without the count."""
    model, x = model_and_input()
    bare = step(model, x)
    bare_grads = [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]
    model.zero_grad()
    counter = FlopCounterMode(display=False)
    with counter:
        step(model, x)
    model.zero_grad()
    with StepFlops() as flops:
        counted = step(model, x)
    assert torch.equal(counted, bare)
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.equal(g, b) for g, b in zip(grads, bare_grads, strict=True))
    record = flops.record()
    assert record["flops_per_step"] == counter.get_total_flops() > 0
    assert record["flops_by_dtype"] == {"float32": record["flops_per_step"]}
    assert 0 < record["conv_flops"] < record["flops_per_step"]


def test_under_bf16_autocast_the_flops_are_kept_as_bf16() -> None:
    model, x = model_and_input()
    with StepFlops() as flops:
        step(model, x, autocast=True)
    by_dtype = flops.record()["flops_by_dtype"]
    assert max(by_dtype, key=by_dtype.get) == "bfloat16"


def test_a_formula_that_raises_stops_the_count_not_the_step() -> None:
    model, x = model_and_input()
    flops = StepFlops()

    def broken(*args: Any, **kwargs: Any) -> int:
        raise ValueError("a formula torch changed")

    flops.registry = {packet: broken for packet in flops.registry}
    with flops:
        loss = step(model, x)
    assert torch.isfinite(loss)
    note = flops.record()["flops_note"]
    assert note["code"] == "unavailable.own_job_flop_count_failed"
    assert "ValueError: a formula torch changed" in note["figures"]["error"]


def test_the_optimizers_parameters_and_bytes() -> None:
    """Parameters shared by two optimizers counted once; AdamW's two state tensors a
    parameter (and its step count) after one step."""
    model, x = model_and_input()
    head = torch.nn.Linear(5, 1)
    adam = torch.optim.AdamW(model.parameters())
    sgd = torch.optim.SGD([*head.parameters(), next(model.parameters())], lr=0.1)
    step(model, x)
    adam.step()
    facts = optimizer_facts([adam, sgd])
    params = [*model.parameters(), *head.parameters()]
    assert facts["parameters"] == sum(p.numel() for p in params)
    param_bytes = sum(p.numel() * 4 for p in params)
    assert facts["static"]["parameter_bytes"] == facts["static"]["gradient_bytes"] == param_bytes
    model_bytes = sum(p.numel() * 4 for p in model.parameters())
    state = facts["static"]["optimizer_state_bytes"]
    assert 2 * model_bytes <= state <= 2 * model_bytes + 4 * 8 * len(list(model.parameters()))
    assert optimizer_facts([]) == {}


class Rank:
    """What job_peak reads of a rank's measurement."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    ("by_dtype", "dtype"),
    [({"bfloat16": 9.0, "float32": 1.0}, "bf16"), ({"float16": 5.0, "float32": 4.0}, "fp16")],
)
def test_the_peak_is_the_gpus_at_the_dtype_most_flops_ran_in(
    by_dtype: dict[str, float], dtype: str
) -> None:
    rank = Rank(device_name=H100, flops_by_dtype=by_dtype, conv_flops=0.0, tf32=TF32_OFF)
    peak = job_peak(rank)  # type: ignore[arg-type]
    assert peak.note is None
    assert peak.tflops == peak_tflops(H100, "bf16" if dtype == "bf16" else "amp", False)[0]


def test_fp32_flops_take_tf32s_peak_only_where_tf32_may_run() -> None:
    fp32 = {"float32": 10.0}
    tf32 = {**TF32_OFF, "matmul": True}
    off_rank = Rank(device_name=H100, flops_by_dtype=fp32, conv_flops=0.0, tf32=TF32_OFF)
    on_rank = Rank(device_name=H100, flops_by_dtype=fp32, conv_flops=0.0, tf32=tf32)
    off, on = job_peak(off_rank), job_peak(on_rank)  # type: ignore[arg-type]
    assert off.tflops == peak_tflops(H100, "fp32", False)[0]
    assert on.tflops == peak_tflops(H100, "fp32", True)[0]
    assert on.tflops is not None and off.tflops is not None and on.tflops > off.tflops


def test_no_peak_on_cpu_nor_for_a_dtype_without_one() -> None:
    cpu_rank = Rank(device_name=None, flops_by_dtype={"float32": 1.0})
    cpu = job_peak(cpu_rank)  # type: ignore[arg-type]
    assert cpu.tflops is None and cpu.note is not None and cpu.note.code == "peak.cpu"
    fp64 = Rank(device_name=H100, flops_by_dtype={"float64": 1.0}, conv_flops=0.0, tf32=TF32_OFF)
    odd = job_peak(fp64)  # type: ignore[arg-type]
    assert odd.tflops is None and odd.note is not None
    assert (odd.note.code, odd.note.figures) == ("peak.own_job_dtype", {"dtype": "float64"})
    uncounted = Rank(device_name=H100, flops_by_dtype={}, tf32=TF32_OFF)
    none = job_peak(uncounted)  # type: ignore[arg-type]
    assert none.note is not None and none.note.code == "own_job.no_flops"


def test_a_compiled_graph_is_seen_so_no_step_is_counted_outside_it() -> None:
    """torch.compile made a graph in this process: the probe counts no FLOPs then (the
    counted step would run eagerly, numerics apart from the compiled graphs)."""
    model = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    model(torch.randn(2, 4)).sum().backward()
    assert compiled()
