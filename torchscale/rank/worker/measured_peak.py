"""The peak a rank's node really reaches, for MFU against the measured peak.

`torchscale validate --level perf` (and `burn`) saves each node's report, with
`measured_peaks` (dtype -> the median over its GPUs of the best matmul TFLOP/s found), at
`<experiment>/acceptance/<host>.<level>.json`. The host process passes the acceptance
directories to look in (the experiment's own, then the default `standalone` one); each rank
reads its own host's newest report and takes the figure for the dtype its MFU peak uses. This
reads the JSON by hand: the report's model lives in the host-side validate package, above the
rank side, and only three keys are needed.

MFU above 100 % of either peak cannot be: `guarded_mfu` reports none, with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LEVELS = ("perf", "burn")
RUN_PERF = "run `torchscale validate --level perf` on the node first"


@dataclass(frozen=True)
class MeasuredPeak:
    """One rank's measured peak (None) with why not, or its value and where it comes from."""

    tflops: float | None
    basis: str


def read_measured_peak(dirs: Sequence[str], host: str, dtype: str) -> MeasuredPeak:
    """The newest `validate` report of `host` in `dirs` (perf or burn) for `dtype`."""
    newest: tuple[str, Path, dict[str, object]] | None = None
    for folder in dirs:
        for level in LEVELS:
            path = Path(folder) / f"{host}.{level}.json"
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or data.get("kind") != "torchscale.validate":
                continue
            created = str(data.get("created_at", ""))
            if newest is None or created > newest[0]:
                newest = (created, path, data)
    if newest is None:
        return MeasuredPeak(None, f"no measured peak for host {host}: {RUN_PERF}")
    created, path, data = newest
    peaks = data.get("measured_peaks")
    value = peaks.get(dtype) if isinstance(peaks, dict) else None
    if not isinstance(value, (int, float)) or value <= 0:
        return MeasuredPeak(None, f"no measured {dtype} peak for host {host} in {path}")
    return MeasuredPeak(
        float(value),
        f"measured by `torchscale validate` on {host} at {created}: {dtype} {value:.4g} "
        f"TFLOP/s ({path})",
    )


def cell_measured_peak(peaks: Sequence[MeasuredPeak]) -> MeasuredPeak:
    """The cell's: the mean over ranks (the total measured capacity per device), only when
    every rank's node has one (else the first reason)."""
    missing = [p for p in peaks if p.tflops is None]
    if missing or not peaks:
        return MeasuredPeak(None, missing[0].basis if missing else "no ranks")
    values = [p.tflops for p in peaks if p.tflops is not None]
    bases = list(dict.fromkeys(p.basis for p in peaks))
    basis = bases[0] if len(bases) == 1 else f"mean over {len(peaks)} ranks: " + "; ".join(bases)
    return MeasuredPeak(sum(values) / len(values), basis)


def guarded_mfu(
    achieved: float | None, peak: float | None, which: str
) -> tuple[float | None, str | None]:
    """(MFU, None) or (None, why not); above 100 % of the peak it is a bug, not a figure."""
    if achieved is None or not peak:
        return None, None
    mfu = achieved / peak
    if mfu > 1.0:
        return None, (
            f"MFU above 100 % of the {which} peak ({mfu:.2f}): a FLOP count or peak bug, "
            "not reported"
        )
    return mfu, None
