"""`run_predict`: forecasts of world sizes not measured yet, from an experiment's measured cells
and comm runs, written to its forecasts/ (docs/prediction.md). `torchscale predict` is a thin
call into it; it prints nothing. Reads JSON only (no torch, no pandas), so every mistake is
answered at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchscale.contracts.errors import EXIT_USAGE, ResultsInputError, UsageError, describe_os_error
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.schema.forecast import Forecast, ForecastKey
from torchscale.contracts.wording.spell import ms_or_s
from torchscale.offline.analysis.prediction.forecast import (
    FORECAST_STRATEGIES,
    Group,
    build_forecast,
    measured_groups,
)
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import read_cells, read_comm, read_folder
from torchscale.offline.results.experiment import holds_sweep
from torchscale.offline.results.forecast_store import (
    new_forecast_id,
    read_forecasts,
    utc_now,
    write_forecast,
)


def parse_counts(text: str, what: str) -> list[int]:
    """'4,8,16' -> [4, 8, 16]; anything else is one clear UsageError."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise UsageError(
                f"{what} {text!r}: give positive whole numbers separated by commas, e.g. 4,8,16"
            )
        values.append(int(part))
    return sorted(set(values))


def parse_strategies(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in FORECAST_STRATEGIES]
    if bad or not names:
        raise UsageError(
            f"--strategy {text!r}: predict forecasts {' and '.join(FORECAST_STRATEGIES)} "
            "(comma-separated)"
        )
    return list(dict.fromkeys(names))


def experiments_in(source: Path) -> list[Path]:
    """`source` if it holds cells/, else its sub-folders that do; none is a UsageError."""
    if not source.is_dir():
        raise ResultsInputError(f"{source}: no such results directory")
    roots = (
        [source] if holds_sweep(source) else sorted(p for p in source.iterdir() if holds_sweep(p))
    )
    roots = [r for r in roots if any(ResultLayout(r).cells_dir.glob("*.json"))]
    if not roots:
        raise ResultsInputError(f"{source}: no measured cells (cells/*.json) to forecast from")
    return roots


@dataclass
class PredictRequest:
    source: Path
    world_sizes: list[int]
    nodes: list[int] = field(default_factory=lambda: [1])
    strategies: list[str] | None = None  # None: the strategies measured
    write: bool = True


@dataclass
class Refusal:
    """A forecast not made, and why."""

    what: str
    why: str


@dataclass
class PredictRun:
    forecasts: list[Forecast] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    skipped: list[Refusal] = field(default_factory=list)  # input files that could not be read
    exit_code: int = 0  # EXIT_USAGE when nothing could be forecast: the refusals say why


_GroupKey = tuple[str, str, int, str, str]  # model, label, batch, precision, device


@dataclass
class _Experiment:
    """One experiment as read and checked, before anything is computed."""

    root: Path
    groups: dict[_GroupKey, dict[str, Group]]
    runs: list[CommResult]
    wanted: list[str]


def _checked(request: PredictRequest, skipped: list[Refusal]) -> list[_Experiment]:
    """Every experiment read and every usage mistake raised, so that a mistake found in a
    later group leaves no forecast of an earlier one behind."""
    experiments = []
    for root in experiments_in(request.source):
        # each file that cannot be used is one line in `skipped` (a forecast from fewer cells
        # than the folder holds must say so)
        layout = ResultLayout(root)
        results, bad_cells = read_cells(layout)
        runs, bad_runs = read_folder(layout.comm_dir, read_comm)
        skipped += [Refusal(str(path), why) for path, why in bad_cells + bad_runs]
        groups = measured_groups(results)
        if not groups:
            raise ResultsInputError(f"{root}: no ok ddp or fsdp cell to forecast from")
        measured = {s for by in groups.values() for s, g in by.items() if g.cells}
        wanted = request.strategies or sorted(measured)
        # a strategy neither measured nor derivable (the other one measured and a comm run to
        # carry it over) is a usage error
        for strategy in wanted:
            if strategy not in measured and not any(r.status == "ok" for r in runs):
                raise UsageError(
                    f"--strategy {strategy}: not measured in {root} and not derivable without a "
                    f"comm run (benchmark {strategy}, or run `torchscale comm` into {root})"
                )
        for by_strategy in groups.values():
            sizes = [g.cells[0].world_size for g in by_strategy.values() if g.cells]
            below = [n for n in request.world_sizes if sizes and n < min(sizes)]
            if below:
                raise UsageError(
                    f"--gpus {','.join(map(str, below))}: below the smallest measured world "
                    f"size ({min(sizes)}); a forecast extrapolates up from what was measured"
                )
        experiments.append(_Experiment(root, groups, runs, wanted))
    return experiments


def run_predict(request: PredictRequest, created_at: str | None = None) -> PredictRun:
    """Every forecast asked for: per experiment, model and batch measured, strategy, world
    size and node count. Written to <experiment>/forecasts/ unless `request.write` is off.
    None made at all: nothing written and `exit_code` is EXIT_USAGE."""
    created = created_at or utc_now()
    run = PredictRun()
    made_in: list[tuple[Path, Forecast]] = []
    experiments = _checked(request, run.skipped)
    missed = _how_far_missed([e.root for e in experiments])
    for experiment in experiments:
        for group, by_strategy in sorted(experiment.groups.items()):
            usable = {s: g for s, g in by_strategy.items() if g.cells}
            if not usable:
                continue
            for strategy in experiment.wanted:
                source = usable.get(strategy) or next(iter(usable.values()))
                for world in request.world_sizes:
                    for nodes in request.nodes:
                        made = _one(
                            group, strategy, world, nodes, source, experiment, created, missed
                        )
                        if isinstance(made, Refusal):
                            run.refused.append(made)
                        else:
                            run.forecasts.append(made)
                            made_in.append((experiment.root, made))
    if not run.forecasts:
        run.exit_code = EXIT_USAGE
        return run
    if request.write:
        for root, forecast in made_in:
            try:
                run.written.append(write_forecast(root, forecast))
            except OSError as exc:
                raise ResultsInputError(
                    f"{root}: cannot write its forecasts: {describe_os_error(exc)}"
                ) from None
    return run


def _one(
    group: _GroupKey,
    strategy: str,
    world: int,
    nodes: int,
    source: Group,
    experiment: _Experiment,
    created: str,
    missed: tuple[float, int] | None = None,
) -> Forecast | Refusal:
    model, label, batch, precision, device = group
    if source.strategy == strategy:  # a size measured is a fit of that cell, no forecast
        for cell in source.cells:
            if (cell.world_size, cell.nodes) == (world, nodes):
                return Refusal(
                    " ".join([label, f"b{batch}", f"x{world}", precision, strategy]),
                    f"measured: median step {ms_or_s(cell.step.value)} (cells/"
                    f"{cell.cell_id}.json); a forecast there would be a fit of that cell",
                )
    key = ForecastKey(
        model=model,
        label=label,
        batch_size=batch,
        precision=precision,  # type: ignore[arg-type]
        strategy=strategy,  # type: ignore[arg-type]
        world_size=world,
        nodes=nodes,
        device=device,  # type: ignore[arg-type]
    )
    made = build_forecast(
        key,
        source.cells,
        experiment.runs,
        forecast_id=new_forecast_id(key, created),
        created_at=created,
        measured_strategy=source.strategy,
        missed=missed,
    )
    return Refusal(key.slug(), made) if isinstance(made, str) else made


def _how_far_missed(roots: list[Path]) -> tuple[float, int] | None:
    """The worst error of the forecasts already scored in these experiments (at least 3), what
    a forecast no back-test can check is widened to, and how many were scored; None before
    there is such a record."""
    scores = [s for root in roots for s in read_forecasts(root).scores]
    if len(scores) < 3:
        return None
    return max(abs(s.error) for s in scores), len(scores)
