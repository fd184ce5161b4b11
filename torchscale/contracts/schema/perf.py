"""What `validate --level perf` hands its ranks and what rank 0 writes back: the spec, each
rank's figures (matmul peaks, bandwidths, its GPU's power limits) and the node's GPU-to-GPU
matrix and PCIe topology. The ranks (rank/programs/perf.py) write them; the host
(orchestration/validate/perf.py) plans with the spec and judges the figures, without torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.pcie_topology import HostTopology, PcieLink
from torchscale.contracts.power_limit import PowerLimit
from torchscale.contracts.versioned import Record

Shape = tuple[int, int, int]  # (M, N, K): (M, K) @ (K, N)


class Probe(Record):
    """One shape measured: its achieved TFLOP/s (median of the repeats), or why it has none."""

    m: int
    n: int
    k: int
    tflops: float | None = None
    seconds_per_matmul: float | None = None
    iters: int = 0
    repeats_tflops: list[float] = Field(default_factory=list)
    error: str | None = None

    @property
    def shape(self) -> Shape:
        return (self.m, self.n, self.k)


class PeakResult(Record):
    """The best matmul TFLOP/s found for one dtype on one device, beside the spec sheet."""

    dtype: str
    device: str = Field(description="'cpu' or 'cuda:N'")
    device_name: str
    best_tflops: float | None = None
    best_shape: tuple[int, int, int] | None = None
    probes: list[Probe] = Field(default_factory=list)
    spec_tflops: float | None = None
    spec_source: str | None = Field(default=None, description="the vendor page of the figure")
    spec_note: Finding | None = Field(default=None, description="why there is no spec figure")
    ratio: float | None = Field(default=None, description="best / spec, where spec is known")
    suspect: Finding | None = Field(default=None, description="why the figure cannot be true")
    unavailable: Finding | None = Field(default=None, description="why this dtype was not measured")
    notes: list[Finding] = Field(
        default_factory=list, description="how the search went (its threads, why it stopped)"
    )
    budget_s: float | None = None
    elapsed_s: float | None = None

    @property
    def headline_tflops(self) -> float | None:
        """The figure to report: none when unavailable or physically impossible."""
        return None if self.suspect or self.unavailable else self.best_tflops


class BandwidthResult(Record):
    """One bandwidth figure, or why there is none."""

    check: str = Field(
        description="'memory.copy', 'memory.triad', 'h2d' or 'd2h' (this GPU alone), "
        "'h2d.all' or 'd2h.all' (every GPU copying at once)"
    )
    device: str
    gpus_at_once: int = Field(default=1, description="GPUs copying at the same time")
    gbps: float | None = Field(description="bytes moved / seconds / 1e9")
    bytes_per_call: int | None = None
    seconds_per_call: float | None = None
    calls: int = 0
    unavailable: Finding | None = Field(default=None, description="why there is no figure")
    link: PcieLink | None = Field(
        default=None,
        description="this GPU's PCIe link read while these copies ran (the fastest of the "
        "reads); None: not read",
    )


class P2PPair(Record):
    src: int
    dst: int
    peer_access: bool
    gbps: float | None
    latency_us: float | None


class P2PMatrix(Record):
    """Every ordered GPU pair: one-way bandwidth and a tiny copy's latency."""

    gpus: list[int] = Field(default_factory=list)
    pairs: list[P2PPair] = Field(default_factory=list)
    unavailable: Finding | None = Field(default=None, description="why there is no matrix")


class PerfSpec(Record):
    """What every rank of a perf run measures, and where rank 0 writes it."""

    device: Literal["cuda", "cpu"]
    dtypes: list[str]
    matmul_budget_s: float = Field(description="shape-search budget per dtype, per GPU")
    memory: bool = True
    host_link: bool = True
    p2p: bool = True
    result_path: str
    phase_dir: str | None = Field(
        default=None,
        description="where rank 0 writes each phase as it ends, a PerfRun of that phase alone "
        "(NN-<phase>.json), so a stopped run keeps what finished",
    )


class RankPerf(Record):
    """One rank's (one GPU's) figures."""

    rank: int
    device: str
    device_name: str
    uuid: str | None = Field(
        default=None, description="CUDA: the GPU's UUID as torch reports it (names it to NVML)"
    )
    matmul: list[PeakResult] = Field(default_factory=list)
    bandwidth: list[BandwidthResult] = Field(default_factory=list)
    power_limit: PowerLimit | None = Field(
        default=None,
        description="CUDA: this GPU's enforced and default power limits (NVML); None on CPU",
    )


class PerfRun(Record):
    """Rank 0's file: every rank's figures and the GPU-to-GPU matrix."""

    world_size: int
    ranks: list[RankPerf]
    p2p: P2PMatrix | None = None
    host_topology: HostTopology | None = Field(
        default=None, description="which GPUs share a PCIe link to the host (CUDA only)"
    )
