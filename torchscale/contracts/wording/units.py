"""How a setting, a count or a unit is written where it is not a measured figure with an
interval: a limit as the user set it ('600 s'), a count ('124,439,808'), a multiple ('1.33x'),
a threshold in whole percent ('30 %'), a size in GiB or GB, N of a thing ('8 x H100'). One
spelling each, so a timeout reads the same in a failure, a dry run and a Slurm preflight."""

from __future__ import annotations

GIB = 1024**3
_SI = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def as_set(value: float) -> str:
    """A setting or a limit as the user wrote it: 600, 0.5, 1e+06 (no digits added)."""
    return f"{value:g}"


def limit_s(seconds: float) -> str:
    """A time limit in seconds as set: '600 s', '0.5 s'."""
    return f"{as_set(seconds)} s"


def whole_s(seconds: float) -> str:
    """A duration to the second, for a wall time or an estimate: '42 s'."""
    return f"{seconds:.0f} s"


def count(number: int) -> str:
    """A count with thousands separators: '124,439,808'."""
    return f"{number:,}"


def si_count(value: float) -> str:
    """A count with an SI prefix and 3 significant digits (8.18 G), as FLOPs are quoted."""
    for prefix, scale in _SI:
        if value >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.0f}"


def times(ratio: float) -> str:
    """How many times another figure: '1.33x'."""
    return f"{ratio:.2f}x"


def of(number: object, thing: object) -> str:
    """N of a thing: '8 x H100'."""
    return f"{number} x {thing}"


def whole_pct(share: float) -> str:
    """A threshold or a share in whole percent: 0.3 -> '30 %'."""
    return f"{share * 100:.0f} %"


def cv(value: float) -> str:
    """A coefficient of variation: '0.12'."""
    return f"{value:.2f}"


def gib(size_bytes: float) -> str:
    """A device's memory in whole GiB: '80 GiB'."""
    return f"{size_bytes / GIB:.0f} GiB"


def gb(size_bytes: float, places: int = 2) -> str:
    """A size in decimal GB at `places` decimals: '1.24 GB'."""
    return f"{size_bytes / 1e9:.{places}f} GB"


def ms_short(seconds: float) -> str:
    """A step time in ms to 3 significant figures, no unit: '52.6' (for 'a [b, c] ms')."""
    return f"{seconds * 1e3:.3g}"


def cores(value: float) -> str:
    """CPU cores to a tenth: '3.4'."""
    return f"{value:.1f}"
