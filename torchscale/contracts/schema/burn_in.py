"""What `validate --level burn` hands its ranks and what rank 0 writes back: the spec and, per
rank, each interval's figures, the fingerprints of the seeded work and NVML's error counters.
The ranks (rank/programs/burn_in.py) write them; the host (orchestration/validate/burn_in.py)
judges them, without torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import Record


class BurnSpec(Record):
    device: Literal["cuda", "cpu"]
    duration_s: float
    interval_s: float
    gemm_n: int
    copy_bytes: int
    fingerprint_every: int = Field(description="intervals between fingerprints")
    result_path: str
    # internal, for the detector's own test only (no CLI option sets it): this rank flips one
    # bit of its seeded result from its second fingerprint on
    corrupt_rank: int | None = None


class Interval(Record):
    index: int
    t_s: float = Field(description="seconds since the burn began, at the interval's end")
    tflops: float | None
    copy_gbps: float | None
    sm_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    slowdown: list[str] = Field(default_factory=list, description="NVML slowdown reasons seen")


class Fingerprint(Record):
    interval: int = Field(description="after this many intervals (0: before the first)")
    sha256: str


class RankBurn(Record):
    rank: int
    device: str
    device_name: str
    intervals: list[Interval] = Field(default_factory=list)
    fingerprints: list[Fingerprint] = Field(default_factory=list)
    counters_start: dict[str, int] = Field(default_factory=dict)
    counters_end: dict[str, int] = Field(default_factory=dict)
    unavailable: dict[str, Finding] = Field(
        default_factory=dict, description="why a reading is missing, by reading"
    )


class BurnRun(Record):
    world_size: int
    duration_s: float
    ranks: list[RankBurn]
