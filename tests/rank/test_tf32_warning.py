"""The cell warning for fp32 on a GPU with TF32 units left off (torch's default): decided by a
pure function from the device name, the precision and torch's TF32 settings, so it is tested
here without a GPU; the H100 run's fp32 cells are the case it was written for."""

from __future__ import annotations

import json

import pytest

from tests.h100_replay import DEFAULT_SWEEP, h100_cell
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_peaks import Tf32Settings, tf32_off_warning
from torchscale.contracts.schema.cell_warning import CellWarning
from torchscale.contracts.wording import say

H100 = "NVIDIA H100 80GB HBM3"
OFF = "torch.backends.cuda.matmul.allow_tf32=False"
ON = "torch.backends.cuda.matmul.fp32_precision='tf32'"
CONV_TF32 = "torch.backends.cudnn.conv.fp32_precision='tf32'"


def settings(matmul: bool | None, conv: bool | None = True) -> Tf32Settings:
    return Tf32Settings(matmul, conv, OFF if matmul is False else ON, CONV_TF32)


def test_an_fp32_cell_with_tf32_matmuls_off_is_warned_with_the_peaks_and_the_way_out() -> None:
    figures = tf32_off_warning(H100, "fp32", False, settings(False))
    assert figures is not None
    warning = say(Finding(code="warning.tf32_off", figures=figures))
    assert warning.startswith("fp32 matmuls with TF32 off (torch's default): slower than TF32")
    assert "67 against 494 TFLOP/s" in warning  # the H100 SXM row's fp32 and tf32 peaks
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" in warning and "precision: bf16" in warning


@pytest.mark.parametrize(
    ("device", "precision", "conv_net", "tf32"),
    [
        (H100, "bf16", False, settings(False)),  # bf16 runs on the 16-bit tensor cores
        (H100, "amp", False, settings(False)),
        (H100, "fp32", False, settings(True)),  # TF32 on: nothing to say
        (H100, "fp32", False, settings(None)),  # unreadable: MFU says so, no guess here
        (H100, "fp32", True, settings(False, conv=True)),  # a conv net's convolutions use TF32
        ("Tesla V100-SXM2-32GB", "fp32", False, settings(False)),  # no TF32 units
        ("Some Future GPU", "fp32", False, settings(False)),  # not in the table
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "fp32", False, settings(False)),
    ],
)
def test_no_tf32_warning_where_it_would_not_hold(
    device: str, precision: str, conv_net: bool, tf32: Tf32Settings
) -> None:
    assert tf32_off_warning(device, precision, conv_net, tf32) is None


def test_a_conv_net_without_tf32_anywhere_is_warned() -> None:
    assert tf32_off_warning(H100, "fp32", True, settings(False, conv=False)) is not None


def test_the_h100_runs_fp32_cells_would_carry_the_warning() -> None:
    """What the H100 run's tiny-gpt2 fp32 cell recorded (TF32 matmuls off, its device name):
    the warning it now gets, where the result then had none about TF32."""
    cell = json.loads(h100_cell(DEFAULT_SWEEP, "tiny-gpt2__b16__w1").read_text("utf-8"))
    recorded = cell["environment"]["tf32"]
    assert recorded["matmul"] == OFF
    assert not any("TF32" in w for w in cell["warnings"])
    tf32 = Tf32Settings(False, True, recorded["matmul"], recorded["conv"])
    device = cell["environment"]["device_name"]
    assert tf32_off_warning(device, cell["cell"]["precision"], False, tf32) is not None


def test_rank_zeros_setup_warning_lands_in_the_cells_warnings() -> None:
    """CellFacts.warnings (what rank 0 saw at set-up) are the result's warnings, rendered
    wherever a cell's warnings are."""
    from dataclasses import replace

    from tests.rank.test_aggregate import make_facts, make_rank, make_spec
    from torchscale.rank.worker.aggregate import aggregate

    warning = tf32_off_warning(H100, "fp32", False, settings(False))
    assert warning is not None
    typed = CellWarning.of("other", "warning.tf32_off", warning)
    facts = replace(make_facts(peak=67.0), warnings=(typed,))
    result = aggregate(make_spec(world=1), [make_rank(0, [1, 1, 1])], facts)
    assert typed in result.warnings
