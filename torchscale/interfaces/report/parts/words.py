"""Plain words for the report's headings and legends, with the technical term kept beside them:
a stakeholder reads "Communication not overlapped", an engineer finds "exposed
transfer" in the column's tooltip (HTML) or the table's footnote (every format), the same term
the terminal, the JSON and docs/methodology.md use. One place, so a part of the step is called
the same everywhere in the report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.contracts.wording import cell_warnings
from torchscale.interfaces.report.model import Column, ValueFormat

# the lead of the findings where the machine spoiled the numbers (the summary and the
# bottlenecks section say it alike)
HOST_FIRST = (
    "Fix the host first: these runs shared their machine with other processes, so the findings "
    "below may be the machine's rather than the workload's; their recommendations tune the "
    "workload and come after a rerun on an idle node."
)


@dataclass(frozen=True)
class Term:
    plain: str  # the heading or legend entry
    technical: str  # the term the terminal, the JSON and the docs use
    meaning: str  # one line: what it measures

    def explained(self) -> str:
        """'exposed transfer: communication that no computation hid'."""
        return f"{self.technical}: {self.meaning}"


TERMS: dict[str, Term] = {
    "compute": Term("Computing", "compute", "the rank's own forward, backward and optimizer"),
    "data": Term("Waiting for data", "data", "waiting for the next batch"),
    "wait_for_peers": Term(
        "Waiting for slower ranks",
        "waiting for peers",
        "idle until the slowest rank arrives (load imbalance, sync stall)",
    ),
    "exposed_transfer": Term(
        "Communication not overlapped",
        "exposed transfer",
        "communication that no computation hid (the smallest grad-sync wait of any rank)",
    ),
    "rest": Term("Other", "rest", "time between the measured phases"),
    "grad_sync_wait": Term(
        "Gradient sync wait", "grad_sync_wait", "time in the gradient all-reduce, waits included"
    ),
    "exposed_comm": Term(
        "Communication not overlapped",
        "exposed communication",
        "communication time beyond the slowest rank's compute",
    ),
    "units": Term(
        "Figures compared (baseline vs now)",
        "units judged",
        "per-run figures where both sides hold several runs, else per-repeat figures",
    ),
    "config": Term(
        "Configuration",
        "bBATCH xRANKS PRECISION LAYOUT",
        "b32 x2 fp32 ddp = batch 32 per rank on 2 ranks in fp32 with DDP",
    ),
}


def plain(key: str) -> str:
    return TERMS[key].plain


def term_column(
    key: str, term: str, value_format: ValueFormat = "text", *, suffix: str = ""
) -> Column:
    """A column headed in plain words (`TERMS[term]`, then `suffix`), its technical term as
    the tooltip."""
    entry = TERMS[term]
    return Column(
        key=key,
        label=entry.plain + suffix,
        format=value_format,
        align="left" if value_format == "text" else "right",
        term=entry.explained(),
    )


def footnote(keys: Iterable[str]) -> str:
    """'Terms: Communication not overlapped = exposed transfer: communication ...; ...': the
    technical terms behind plain headings, for formats without tooltips."""
    parts = [f"{TERMS[k].plain} = {TERMS[k].explained()}" for k in dict.fromkeys(keys)]
    return "Terms: " + "; ".join(parts)


# the technical terms a report may use, each in one plain sentence: the report's last section
# lists those its text uses (sections/glossary.py), so jargon is explained once, not inline
GLOSSARY: dict[str, str] = {
    "95 % interval": "the range the true figure lies in with 95 % confidence, from the "
    "repeats; '±' gives half its width, '[low, high]' its ends where it is lopsided",
    "not measurable": "the figure's interval is wider than the figure (or reaches 0), so the "
    "measurement cannot tell its value: more repeats or a quieter machine can",
    **cell_warnings.glossary(CV_WARN_THRESHOLD),  # the reliability rule's own conditions
    "busy machine": "other processes used the cell's cores or GPUs during its timed windows, "
    "so its figures measure the contention too",
    "CV": "coefficient of variation: the standard deviation of the step times over their mean",
    "p50": "median step time: half the steps were faster",
    "p95": "95th-percentile step time: 95 % of the steps were faster",
    "MFU": "model FLOPs utilisation: the model's floating-point work per second over the "
    "device's peak",
    "scaling efficiency": "throughput at N ranks over N times the throughput per rank at the "
    "smallest world size (100 % = linear)",
    "exposed communication": "communication time during which no computation ran (not hidden "
    "behind compute)",
    "exposed transfer": "communication that no computation hid, waiting for peers excluded",
    "sync stall": "the share of the step ranks spend waiting for slower peers at a collective",
    "straggler": "the rank the others wait for, named only when its extra work is significant",
    "what-if": "how much shorter a step would be if the straggler were on par with the others",
    "Welch's t on the log ratio": "the test that compares two configurations with 2-3 repeats a "
    "side: a t interval of the difference of their log throughputs",
    "ahead of the next": "the best configuration's lead over the runner-up: the ratio of their "
    "median throughputs with its 95 % interval (Welch's t on the log ratio below 4 repeats a "
    "side, else a bootstrap)",
    "step times vary": "the step-time CV: the standard deviation of the step times over their mean",
    "bootstrap": "an interval from resampling the repeats (4 or more), without assuming a shape",
    "DDP": "DistributedDataParallel: each rank holds the whole model and averages gradients",
    "FSDP": "fully sharded data parallel: the model's parameters are split across ranks",
}
