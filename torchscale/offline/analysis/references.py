"""The speed references a model's MFU is judged against: what a plain PyTorch loop of that model
reached on one GPU model (benchmarks/workload_reference.py), at a stated batch, precision and
compile, each round it ran. A cell is judged only against a reference of its own model, GPU
model, precision and compile (the batch is stated beside the call: a smaller batch reaching less
is part of what the call says); anything else gets no MFU call (docs/reporting.md, "The decision
line").

Each reference cites the output it was read from. Its band is its own run-to-run spread: the
lowest and highest MFU of its rounds (one round: one value, no spread measured).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """One measured reference: `mfu` per round, in the order they ran."""

    model: str  # the zoo's model name ('gpt2')
    gpu: str  # matched as a word of the GPU's name ('H100 80GB HBM3')
    batch: int
    precision: str
    compiled: bool
    mfu: tuple[float, ...]
    measured_on: str  # the date of the run
    source: str  # the output its figures are read from

    @property
    def low(self) -> float:
        return min(self.mfu)

    @property
    def high(self) -> float:
        return max(self.mfu)

    @property
    def rounds(self) -> int:
        return len(self.mfu)


# The first H200 run printed its two rounds' rates (491,951 and 490,113 tokens/s) and the MFU
# of their median (42.4 %); the second H200 run, the same day, one round (479,860: its second
# was cut by the session's time). Each round's MFU is the first's at the same FLOPs per token:
# three rounds over two sessions, so the band holds a day's drift, not one session's.
_H200_FIRST_RATES = (491_951, 490_113)
_H200_FIRST_MEDIAN = sum(_H200_FIRST_RATES) / 2
_H200_RATES = (*_H200_FIRST_RATES, 479_860)
REFERENCES: tuple[Reference, ...] = (
    Reference(
        "gpt2",
        "H100",
        16,
        "bf16",
        True,
        (0.402,),
        "2026-11-26",
        "tests/fixtures/h100_second_run/ref.out.txt",
    ),
    Reference(
        "gpt2",
        "H200",
        16,
        "bf16",
        True,
        tuple(0.424 * rate / _H200_FIRST_MEDIAN for rate in _H200_RATES),
        "2026-11-27",
        "docs/measured.md, 'speed reference, first H200 run' and 'the second H200 run' (their "
        "printouts were not kept)",
    ),
)


def _gpu_words(gpu: object) -> list[str]:
    return str(gpu or "").upper().replace("-", " ").split()


def reference_for(
    model: object, gpu: object, precision: object, compiled: object
) -> Reference | None:
    """The reference measured for this model, GPU model, precision and compile, or None: no
    figure is borrowed across GPUs, models, precisions or compile (unknown: None, NaN)."""
    if compiled is None or compiled != compiled:
        return None
    words = _gpu_words(gpu)
    return next(
        (
            r
            for r in REFERENCES
            if r.model == model
            and r.gpu in words
            and r.precision == precision
            and r.compiled == bool(compiled)
        ),
        None,
    )
