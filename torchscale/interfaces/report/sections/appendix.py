"""Appendix: the sources read, the environment per host (hardware first), what each experiment's
config set (the keys that differ from torchscale's defaults, as short YAML: the whole resolved
config is config.yaml beside the results), one line per figure on how it is measured, and the
versions involved."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import yaml

import torchscale
from torchscale.contracts.finding import Finding
from torchscale.contracts.flop_convention import MFU_CONVENTION
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.schema.profile_analysis import ANALYSIS_SCHEMA_VERSION
from torchscale.contracts.thresholds import CV_WARN_THRESHOLD
from torchscale.contracts.wording import cell_warnings, say
from torchscale.contracts.wording.names import product_of
from torchscale.contracts.wording.spell import of, pct_set
from torchscale.interfaces.report.model import (
    REPORT_SCHEMA_VERSION,
    Block,
    KeyFigure,
    KeyFigures,
    Section,
    Table,
    Text,
    Unavailable,
)
from torchscale.interfaces.report.parts.context import Context, RankUnits, col, present, records
from torchscale.interfaces.report.parts.diagnosis import cross_check_rows
from torchscale.interfaces.report.sources import ExperimentSource
from torchscale.offline.analysis.diagnosis.step_model import ALPHA, MIN_EFFECT_SHARE
from torchscale.offline.analysis.uncertainty import THROUGHPUT_INTERVAL

# the straggler test a run of the package's own worker applies (its phase timers)
STRAGGLER_TEST = {"alpha": ALPHA, "min_share": MIN_EFFECT_SHARE, "own_work": "timers"}

_LIMIT = pct_set(CV_WARN_THRESHOLD)


# how each figure is made; a row said in the report's units (GPUs, or CPU ranks) is a function
METHODOLOGY: list[tuple[str, str | Callable[[RankUnits], str]]] = [
    (
        "Throughput",
        lambda u: (
            f"global samples/s = {product_of('batch', 'grad_accum', u.many, 'steps')} / wall "
            "time of a barrier-bounded window (slowest rank); the median over repeats"
        ),
    ),
    ("Tokens/s", "samples/s x sequence length (language models only)"),
    (
        "Run-to-run spread",
        f"{cell_warnings.SPREAD}, in samples/s: the figure the reliability rule holds to "
        f"±{_LIMIT}; one repeat: spread unknown",
    ),
    (
        "95 % intervals",
        f"throughput: {THROUGHPUT_INTERVAL}; step percentiles and the step model's parts: "
        "moving-block bootstrap over the steps (no interval from 2-3 steps, nor for point "
        "figures); MFU scales with throughput; '±' is half the interval's width, '[low, high]' "
        "the interval where one side is over 1.5 times the other or ± would reach below 0; a "
        "figure whose interval reaches 0 is 'not measurable above noise'; a change of a "
        "percentage (efficiency, MFU, a share) is in points",
    ),
    (
        "Reliability",
        lambda u: (
            "; ".join(
                f"{level}: {said}"
                for level, said in cell_warnings.glossary(CV_WARN_THRESHOLD).items()
            )
            + " (the bound is measurement.cv_warn_threshold's default); "
            f"{cell_warnings.level_word('spread_unknown')} with one repeat. Only "
            f"{cell_warnings.level_word('reliable')} cells get a check mark"
        ),
    ),
    (
        "Step time p50/p95/p99, CV",
        "over every measured step of every repeat, all ranks pooled; CV = sample std / mean",
    ),
    (
        "Scaling efficiency",
        lambda u: (
            f"thr(N) / (N / N_min x thr(N_min)) within model, batch per {u.one}, precision, "
            f"strategy and device: weak scaling, the batch per {u.one} is fixed; 95 % interval: "
            "bootstrap of the "
            "ratio of the two medians over their repeats (Welch's t on the log ratio when a side "
            "has 2-3). Above 100 % with 100 % inside the interval: linear within noise; interval "
            "wholly above 100 %: super-linear, flagged"
        ),
    ),
    (
        "Strong scaling",
        lambda u: (
            f"the same formula within the same global batch (batch per {u.one} shrinking "
            f"as {u.many} grow)"
        ),
    ),
    (
        "One diagnosis per run",
        "the step split, each rank's wait for peers, the straggler verdict, the what-if and the "
        "findings come from one source: the traces where the run was profiled, else the phase "
        "timers; every section shows it in the terminal's words (shares with one decimal, "
        "[low, high] the 95 % interval) and computes none of its own; the other evidence is "
        "kept as cross-checks (the table below), and one that disagrees is said in one line "
        "beside the verdict",
    ),
    (
        "Step split",
        "every step of every rank = compute + data + waiting for peers + exposed transfer + rest, "
        "means over ranks and steps (they add up to the step), each share with its 95 % interval",
    ),
    (
        "Straggler",
        lambda u: (
            say(Finding(code="straggler.test", figures=STRAGGLER_TEST))
            + "; withdrawn only by evidence that significantly names another rank; otherwise "
            "'none' with the largest gap and its interval"
        ),
    ),
    (
        "Waiting for peers by rank",
        "each rank's mean wait for peers over its mean step, with a moving-block bootstrap "
        "interval over its steps",
    ),
    (
        "What-if",
        "per step, the least wait for peers of any other rank (the wait the candidate's "
        "lateness costs them) capped by its own work past the slowest other rank's (its extra "
        "work): an upper bound on the shorter step, with its interval",
    ),
    (
        "Findings",
        "each run's diagnosis' own, costing a part of its step split (at least 2 % of the step "
        "and measurable above noise), and GPU throttling; a busy machine (other processes "
        "using cores during the windows) is a caveat shown with them",
    ),
    (
        "Phase times",
        "medians per rank over the synchronised steps: data, forward, backward compute, "
        "grad-sync wait, optimizer (they add up to the step)",
    ),
    (
        "Exposed communication",
        "the diagnosis' exposed transfer over T, T the mean step (DDP, two or more ranks)",
    ),
    ("Load imbalance", "the diagnosis' wait for peers over T"),
    (
        "Achieved TFLOP/s, MFU",
        "FlopCounterMode FLOPs per step x steps/s over the timed windows; MFU = achieved / the "
        "device's peak dense TFLOP/s for the dtype that runs. " + MFU_CONVENTION,
    ),
    (
        "Memory",
        "static = parameters + gradients + optimizer state held by a rank (exact); non-static "
        "peak = CUDA peak allocated - static; peak RSS = largest process resident set",
    ),
    (
        "Max batch per device",
        "largest batch that trains while batch + 1 runs out of memory: doubling, then bisection, "
        "one fresh process per probe, the answer probed twice; utilisation = peak reserved / GPU "
        "memory",
    ),
    (
        "Data wait",
        "the diagnosis' data part: the mean over ranks of the time per step in the data phase "
        "(DataLoader next() and the copy to the device), share of the mean step; where the "
        "diagnosis holds no data figure: the median of the rank that waited longest over the "
        "median step",
    ),
    (
        "Cost",
        lambda u: (
            f"{u.one}-hours per million = {product_of(u.many, '1e6')} / global rate / 3600, "
            "times the price"
        ),
    ),
    (
        "Sync stall",
        "the diagnosis' waiting for peers: the mean over ranks of the time a rank waits for "
        "the others with nothing else to do, share of the step (a profile analysis without a "
        "diagnosis: its own figure, from the traces' collectives, clock-aligned)",
    ),
    (
        "What-if (a profile analysis without a diagnosis)",
        "the step had one rank arrived at the collectives with the second-last rank",
    ),
    (
        "Regression",
        "medians further apart than half of each side's repeats range together; without "
        "repeats on both sides, a change beyond the default noise threshold",
    ),
]


def _methodology(ctx: Context) -> list[tuple[str, str]]:
    """`METHODOLOGY` in the report's units."""
    return [
        (figure, how if isinstance(how, str) else how(ctx.units)) for figure, how in METHODOLOGY
    ]


def _gpus(environment: dict[str, Any]) -> str:
    gpus = environment.get("gpus") or []
    if not isinstance(gpus, list) or not gpus:
        return "none"
    return ", ".join(of(n, name) for name, n in Counter(str(g) for g in gpus).items())


def _env_row(source: str, host: str, role: str, environment: dict[str, Any]) -> dict[str, Any]:
    usable, count = environment.get("usable_cores"), environment.get("cpu_count")
    cores = f"{usable} usable of {count}" if usable is not None else (str(count) if count else None)
    return {
        "source": source,
        "host": host,
        "role": role,
        "platform": environment.get("platform"),
        "python": environment.get("python"),
        "torch": environment.get("torch"),
        "cuda": environment.get("cuda_runtime"),
        "cudnn": environment.get("cudnn"),
        "nccl": environment.get("nccl"),
        "driver": environment.get("driver"),
        "cpu": environment.get("cpu_model"),
        "cores": cores,
        "threads": environment.get("torch_threads"),
        "gpus": _gpus(environment),
    }


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if isinstance(v, (int, float)) or v is None else str(v)) for k, v in row.items()}


def _environment_rows(source: ExperimentSource) -> list[dict[str, Any]]:
    rows = []
    results: list[tuple[str, CellResult]] = []
    if source.experiment is not None:
        environment = source.experiment.environment
        if environment:
            host = str(environment.get("hostname", "unknown"))
            rows.append(_env_row(source.name, host, "launching host (env.json)", environment))
        results += [("rank 0 of the cells", r) for r in source.experiment.results]
    results += [("rank 0 of the profiled run", p.result) for p in source.profiles if p.result]
    seen: dict[str, int] = {}
    hosts_with_ranks: set[str] = set()
    for role, result in results:
        hosts_with_ranks |= {r.host for r in result.ranks}
        environment = result.environment
        if not environment or environment.get("hostname") is None:
            continue
        host = str(environment["hostname"])
        if host not in seen:
            seen[host] = len(rows)
            rows.append(_env_row(source.name, host, role, environment))
    recorded = {str(r["host"]) for r in rows}
    unrecorded = "ran ranks; no environment recorded (results keep rank 0's host only)"
    rows += [
        {"source": source.name, "host": host, "role": unrecorded}
        for host in sorted(hosts_with_ranks - recorded)
    ]
    return [_clean(r) for r in rows]


def _fold_same_hosts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per distinct host environment, naming every experiment and role it was read
    from: one machine seen by five experiments (and by env.json and rank 0 alike) is one row."""
    folded: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(sorted((k, str(v)) for k, v in row.items() if k not in ("source", "role")))
        if key not in folded:
            folded[key] = {**row, "source": [row["source"]], "role": [row.get("role")]}
        else:
            folded[key]["source"].append(row["source"])
            folded[key]["role"].append(row.get("role"))
    for row in folded.values():
        row["source"] = ", ".join(dict.fromkeys(row["source"]))
        row["role"] = "; ".join(dict.fromkeys(r for r in row["role"] if r)) or None
    return list(folded.values())


def _sources_table(ctx: Context) -> Table:
    rows = []
    for source in ctx.sources.experiments:
        experiment = source.experiment
        statuses = Counter(r.status.value for r in experiment.results) if experiment else Counter()
        versions = sorted({r.schema_version for r in experiment.results}) if experiment else []
        writers = sorted({p.analysis.torchscale_version for p in source.profiles})
        rows.append(
            {
                "name": source.name,
                "path": str(source.path),
                "cells": sum(statuses.values()),
                "ok": statuses.get("ok", 0),
                "profiles": len(source.profiles),
                "versions": ", ".join(str(v) for v in versions) or None,
                "profile_writers": ", ".join(writers) or None,
            }
        )
    return Table(
        id="appendix-sources",
        title="Sources",
        columns=[
            col("name", "Experiment"),
            col("path", "Path"),
            col("cells", "Cells", "int"),
            col("ok", "Ok", "int"),
            col("profiles", "Profiles", "int"),
            col("versions", "Result schema versions"),
            col("profile_writers", "Profiles analysed by torchscale"),
        ],
        rows=rows,
    )


@functools.cache
def _defaults() -> tuple[dict[str, Any], frozenset[str]]:
    """torchscale's config defaults (a minimal valid config, dumped as config.yaml is) and the
    keys that have none (always shown: they say what the sweep is)."""
    from torchscale.orchestration.config.schema import BenchConfig

    minimal = {"experiment_name": "x", "models": ["tiny-mlp"], "gpu_counts": [1]}
    try:
        defaults = BenchConfig.model_validate(minimal).model_dump(mode="json")
    except ValueError:  # cannot happen with a valid schema; then nothing counts as default
        defaults = {}
    required = frozenset(k for k, f in BenchConfig.model_fields.items() if f.is_required())
    return defaults, required | {"models", "jobs"}  # one of them is required: what is swept


def _brief(value: Any) -> Any:
    """A value without its null and empty entries; a list item that is only a name (a model
    without label or options) as the name."""
    if isinstance(value, dict):
        kept = {k: _brief(v) for k, v in value.items() if v not in (None, {}, [])}
        return kept["name"] if set(kept) == {"name"} else kept
    if isinstance(value, list):
        return [_brief(v) for v in value]
    return value


def non_default(config: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The keys of `config` whose value differs from `defaults` (nested sections compared key
    by key), briefly: nulls and empty entries left out. A key the defaults do not know (an
    older config's) is kept unless it is empty."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        default = defaults.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(default, dict):
            nested = non_default(value, default)
            if nested:
                out[key] = nested
        elif value != default and value not in (None, {}, []):
            out[key] = _brief(value)
    return out


_MISSING = object()


def set_keys(config: dict[str, Any]) -> dict[str, Any]:
    """What a config set: its required keys (experiment, models, sizes) and every other key
    that differs from torchscale's default."""
    defaults, required = _defaults()
    shown = non_default(config, {k: v for k, v in defaults.items() if k not in required})
    return {k: shown[k] for k in config if k in shown}


def _config_blocks(ctx: Context) -> tuple[list[Block], dict[str, str]]:
    blocks: list[Block] = []
    missing = {}
    for source in ctx.sources.experiments:
        if source.experiment is None:
            missing[f"resolved config ({source.name})"] = (
                "a directory of profiled or comm runs keeps no config.yaml"
            )
        elif not source.experiment.config:
            missing[f"resolved config ({source.name})"] = (
                "no readable config.yaml in the experiment directory"
            )
        else:
            dumped = yaml.safe_dump(set_keys(source.experiment.config), sort_keys=False, width=100)
            blocks.append(
                Text(
                    text=f"Config of {source.name}: the keys it sets that differ from torchscale's "
                    f"defaults (the whole resolved config: config.yaml in {source.path})"
                )
            )
            blocks.append(Text(text=dumped.rstrip(), preformatted=True))
    return blocks, missing


def build(ctx: Context) -> Section:
    """Sources, environment per host (hardware first), what each config set, methodology,
    versions."""
    blocks: list[Block] = [
        KeyFigures(
            figures=[
                KeyFigure(
                    label="torchscale", value=torchscale.__version__, note="built this report"
                ),
                KeyFigure(label="Report schema", value=REPORT_SCHEMA_VERSION, format="int"),
                KeyFigure(label="Result schema read", value=RESULT_SCHEMA_VERSION, format="int"),
                KeyFigure(
                    label="Profile analysis schema read",
                    value=ANALYSIS_SCHEMA_VERSION,
                    format="int",
                ),
            ]
        ),
        _sources_table(ctx),
    ]
    unavailable: dict[str, str] = {}
    rows = _fold_same_hosts(
        [row for source in ctx.sources.experiments for row in _environment_rows(source)]
    )
    if rows:
        blocks.append(
            Table(
                id="appendix-environment",
                title="Environment per host",
                columns=[
                    col("source", "Experiment"),
                    col("host", "Host"),
                    col("gpus", "GPUs"),
                    col("cpu", "CPU"),
                    col("cores", "Cores"),
                    col("threads", "torch threads", "int"),
                    col("driver", "Driver"),
                    col("cuda", "CUDA"),
                    col("cudnn", "cuDNN"),
                    col("nccl", "NCCL"),
                    col("torch", "torch"),
                    col("python", "Python"),
                    col("platform", "Platform"),
                    col("role", "Recorded by"),
                ],
                rows=rows,
                note="the launching host from env.json; the hosts that ran ranks from the first "
                "result recorded there (rank 0 records it)",
            )
        )
    else:
        unavailable["environment"] = "no env.json and no environment in any result"
    config_blocks, missing = _config_blocks(ctx)
    blocks += config_blocks
    unavailable.update(missing)
    blocks.append(
        Table(
            id="appendix-methodology",
            title="How each figure is measured",
            columns=[col("figure", "Figure"), col("how", "How")],
            rows=[{"figure": f, "how": h} for f, h in _methodology(ctx)],
            note="details: docs/methodology.md and docs/profiling.md",
        )
    )
    blocks += present(_cross_checks(ctx))
    if unavailable:
        blocks.append(Unavailable(items=unavailable))
    return Section(id="appendix", title="Appendix", blocks=blocks)


def _cross_checks(ctx: Context) -> Table | None:
    """Every run's cross-checks of its diagnosis: the detail behind a verdict, kept here and
    never beside it (beside it, only the one line of a check that disagrees)."""
    runs = [(ref.label, ref.diagnosis) for ref in ctx.profiles]
    runs += [(ctx.label(row), ctx.result(row).diagnosis) for row in records(ctx.ok)]
    rows = [row for label, d in runs if d is not None for row in cross_check_rows(label, d)]
    if not rows:
        return None
    return Table(
        id="appendix-cross-checks",
        title="Cross-checks of each run's diagnosis",
        columns=[
            col("run", "Run"),
            col("source", "Decided by"),
            col("check", "Cross-check"),
            col("figure", "Its figure"),
            col("verdict", "Verdict"),
            col("detail", "Detail"),
        ],
        rows=rows,
        note="the other evidence of each run (the other source's step model and verdict, "
        "arrival order, the others' wait, the no_sync windows): it decides nothing; one that "
        "disagrees is said in one line with the run's verdict",
    )
