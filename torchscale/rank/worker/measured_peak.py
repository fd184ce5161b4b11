"""The peak a rank's node really reaches, for MFU against the measured peak.

`torchscale validate --level perf` (and `burn`) saves each node's report, with
`measured_peaks` (dtype -> the median over its GPUs of the best matmul TFLOP/s found), at
`<experiment>/acceptance/<host>.<level>.json`. The host process passes the acceptance
directories to look in (the experiment's own, then the default `standalone` one); each rank
reads its own host's newest report, through the one reader of validate reports
(offline/results/documents.py, any schema version), and takes the figure for the dtype its MFU
peak uses.

MFU above 100 % of either peak cannot be: `guarded_mfu` reports none, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import ValidateReport
from torchscale.contracts.versioned import VersionError
from torchscale.offline.results.documents import read_validate_report

LEVELS = ("perf", "burn")
NOT_LOOKED_FOR = Finding(code="peak.not_looked_for")


@dataclass(frozen=True)
class MeasuredPeak:
    """One rank's measured peak and where it comes from, or None and why not."""

    tflops: float | None
    basis: Finding | None  # the reports it comes from (peak.measured)
    why: Finding | None = None


def read_measured_peak(dirs: Sequence[str], host: str, dtype: str) -> MeasuredPeak:
    """The newest `validate` report of `host` in `dirs` (perf or burn) for `dtype`."""
    newest: tuple[Path, ValidateReport] | None = None
    for folder in dirs:
        for level in LEVELS:
            path = Path(folder) / f"{host}.{level}.json"
            try:  # a report of another version is no peak to use: the cell still measures
                report = read_validate_report(path).doc if path.is_file() else None
            except VersionError:
                report = None
            if report is not None and (newest is None or report.created_at > newest[1].created_at):
                newest = (path, report)
    if newest is None:
        return MeasuredPeak(None, None, Finding(code="peak.not_measured", figures={"host": host}))
    path, report = newest
    value = report.measured_peaks.get(dtype)
    if value is None or value <= 0:
        figures = {"dtype": dtype, "host": host, "path": str(path)}
        return MeasuredPeak(None, None, Finding(code="peak.dtype_not_measured", figures=figures))
    source = {"host": host, "created_at": report.created_at, "dtype": dtype, "path": str(path)}
    return MeasuredPeak(value, Finding(code="peak.measured", figures={"reports": [source]}))


def cell_measured_peak(peaks: Sequence[MeasuredPeak]) -> MeasuredPeak:
    """The cell's: the mean over ranks (the total measured capacity per device), only when
    every rank's node has one (else the first reason)."""
    missing = [p for p in peaks if p.tflops is None]
    if missing or not peaks:
        return MeasuredPeak(None, None, missing[0].why if missing else NOT_LOOKED_FOR)
    values = [p.tflops for p in peaks if p.tflops is not None]
    reports = [r for p in peaks if p.basis for r in p.basis.figures["reports"]]
    figures = {
        "ranks": len(peaks),
        "reports": [r for i, r in enumerate(reports) if r not in reports[:i]],
    }
    return MeasuredPeak(sum(values) / len(values), Finding(code="peak.measured", figures=figures))


def guarded_mfu(
    achieved: float | None, peak: float | None, which: str
) -> tuple[float | None, Finding | None]:
    """(MFU, None) or (None, why not); above 100 % of the peak it is a bug, not a figure."""
    if achieved is None or not peak:
        return None, None
    mfu = achieved / peak
    if mfu > 1.0:
        return None, Finding(code="peak.mfu_above_peak", figures={"mfu": mfu, "which": which})
    return mfu, None
