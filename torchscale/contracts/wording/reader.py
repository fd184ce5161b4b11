"""Figures the report's first screen, its summary tables and the live table spell (the
headline, usability, run verdicts, the GPU summary, acceptance, memory, the terminal summary
and the live table): each here once, so a unit or a rounding changes in one place."""

from __future__ import annotations

from torchscale.contracts.wording import units
from torchscale.contracts.wording.figures import significant
from torchscale.contracts.wording.share_bound import share_bound

count = units.count  # '1,234'
times = units.of  # '8 x H100 80GB HBM3'
whole_pct = units.whole_pct  # a share in whole percent: '64 %'


def shape(label: str, world: int, precision: str, strategy: str) -> str:
    """A searched group as the cells are named: 'gpt2 x2 bf16 ddp'."""
    return f"{label} x{world} {precision} {strategy}"


def with_unit(figure: str, unit: str) -> str:
    """An already spelled figure and its unit: '1,270 ±110 samples/s'."""
    return f"{figure} {unit}"


def one_decimal_range(values: list[float]) -> str:
    """'1.4-1.8', or '1.5' where both ends read alike."""
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low}-{high}"


def bandwidth(gbps: float) -> str:
    """'1.23 GB/s'."""
    return f"{significant(gbps)} GB/s"


def tflops(value: float) -> str:
    """'989 TFLOP/s'."""
    return f"{significant(value)} TFLOP/s"


def narrow_pct(share: float) -> str:
    """A share at most 5 characters wide: '4.2 %' below 10 %, '64 %' from it."""
    return f"{share * 100:.1f} %" if share < 0.0995 else whole_pct(share)


def below_pct(high: float) -> str:
    """A share known only to lie below `high`, in whole percent: '<3 %'."""
    return f"<{share_bound(high, places=0)} %"


def tenth_seconds(value: float) -> str:
    """'27.1 s'."""
    return f"{value:.1f} s"


def cores(value: float) -> str:
    """'1.7 cores'."""
    return f"{value:.1f} cores"


def three_digits(value: float, unit: str) -> str:
    """'0.731 ms' (three significant digits, as `.3g` writes them), then the unit or status."""
    return f"{value:.3g} {unit}"
