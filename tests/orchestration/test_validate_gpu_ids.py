"""Every per-GPU figure of `validate --level perf` names its GPU as an RMA needs it: the UUID
its rank read and, from NVML, the serial and the NVML index (under CUDA_VISIBLE_DEVICES a rank's
CUDA ordinal is not the NVML index, so the UUID, never the ordinal, finds the GPU)."""

from __future__ import annotations

from torchscale.contracts.nvml import NvmlGpu, NvmlState
from torchscale.contracts.schema.perf import PeakResult, PerfRun, RankPerf
from torchscale.orchestration.validate.checks_gpu import identified
from torchscale.orchestration.validate.perf import judge_perf

H100 = "NVIDIA H100 80GB HBM3"
UUIDS = ("7e57c10c-0000-4000-8000-000000000003", "7e57c10c-0000-4000-8000-000000000005")


def _run() -> PerfRun:
    """Two ranks on the node's NVML GPUs 3 and 5 (CUDA_VISIBLE_DEVICES=3,5): cuda:0 and cuda:1."""
    return PerfRun(
        world_size=2,
        ranks=[
            RankPerf(
                rank=rank,
                device=f"cuda:{rank}",
                device_name=H100,
                uuid=uuid,  # bare, as torch prints it
                matmul=[
                    PeakResult(
                        dtype="bf16",
                        device=f"cuda:{rank}",
                        device_name=H100,
                        best_tflops=700.0 - rank,
                    )
                ],
            )
            for rank, uuid in enumerate(UUIDS)
        ],
    )


def test_each_gpu_figure_carries_its_uuid_serial_and_nvml_index() -> None:
    state = NvmlState(
        module=None,
        error=None,
        gpus=[
            NvmlGpu(
                index,
                None,
                H100,
                f"GPU-7e57c10c-0000-4000-8000-00000000000{index}",
                "",
                serial=f"16523220{index:05d}",
            )
            for index in range(8)
        ],
    )
    rows = identified(judge_perf(_run(), "cuda"), state)
    matmul = [r for r in rows if r.check == "matmul.bf16"]
    assert [(r.gpu, r.data["nvml_index"], r.data["serial"]) for r in matmul] == [
        (0, 3, "1652322000003"),
        (1, 5, "1652322000005"),
    ]
    assert [r.data["uuid"] for r in matmul] == list(UUIDS)


def test_a_gpu_nvml_does_not_list_keeps_its_uuid_and_no_invented_serial() -> None:
    rows = identified(judge_perf(_run(), "cuda"), NvmlState(module=None, error="no NVML"))
    (first, *_) = [r for r in rows if r.check == "matmul.bf16"]
    assert first.data["uuid"] == UUIDS[0] and "serial" not in first.data
