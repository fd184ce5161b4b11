"""`torchscale.offline.results.load(DIR)`: one experiment's results as pandas tables. report,
profile and the suites read results through here only."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from torchscale.contracts.errors import ResultsError, describe_os_error
from torchscale.contracts.schema.cell_result import RESULT_SCHEMA_VERSION, CellResult
from torchscale.contracts.schema.sweep_state import SweepState
from torchscale.contracts.step_phases import STEP_RECORD_TIMES, seconds_column
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import read_cells, read_sweep_state
from torchscale.offline.results.frame import cells_table, ranks_table

log = logging.getLogger(__name__)
STEP_COLUMNS = ["cell_id", "rank", "window", "repeat", "step", "time_s"]
# per-step phase times, the training thread's wait for a CPU and its time on a CPU, and a DDP
# comm hook's hold (comm_hold_s, comm_hold_backward_s: only where a plug-in registered a hook);
# NaN where not measured
PHASE_STEP_COLUMNS = [seconds_column(phase) for phase in STEP_RECORD_TIMES]


@dataclass
class Experiment:
    """One results directory, read.

    `cells`: one row per cell (flat columns, the same as summary.csv, plus `schema_version`,
    the version its file holds). `steps`: one row per measured step per rank (window 'sync' or
    'no_sync'). `ranks`:
    one row per cell and rank. `results`: the typed CellResult of every cell. `skipped`: files
    that could not be read, with why.
    """

    root: Path
    config: dict[str, Any]
    environment: dict[str, Any]
    results: list[CellResult]
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    sweep: SweepState | None = None  # sweep.json: the plan and how far it got (None: none kept)
    started: list[str] = field(default_factory=list)  # cell ids with a spec written
    # a started cell's signal, from torchrun's own error file (no sweep.json to say the stop)
    signalled: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.config.get("experiment_name") or self.root.name)

    def result(self, cell_id: str) -> CellResult:
        for result in self.results:
            if result.cell.id == cell_id:
                return result
        raise KeyError(cell_id)

    @cached_property
    def cells(self) -> pd.DataFrame:
        table = cells_table(self.results)
        table["schema_version"] = RESULT_SCHEMA_VERSION
        return table

    @cached_property
    def ranks(self) -> pd.DataFrame:
        return ranks_table(self.results)

    @cached_property
    def steps(self) -> pd.DataFrame:
        columns = STEP_COLUMNS + PHASE_STEP_COLUMNS
        records: list[tuple[Any, ...]] = []
        for result in self.results:
            records += self._steps_of(result.cell.id)
        # one frame from every record: a frame per cell costs ~2 ms each, 1 s at 500 cells
        frame = pd.DataFrame.from_records(records, columns=columns)
        frame[PHASE_STEP_COLUMNS] = frame[PHASE_STEP_COLUMNS].astype("float64")
        return frame

    def _steps_of(self, cell_id: str) -> list[tuple[Any, ...]]:
        """The step records of one cell as tuples in STEP_COLUMNS + PHASE_STEP_COLUMNS order (none
        when the file is missing, unreadable or torn: a torn file is ignored whole rather than
        half-used, and said so in `skipped`)."""
        path = ResultLayout(self.root).steps_path(cell_id)
        if not path.exists():
            return []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self.skipped.append((path, f"unreadable: {describe_os_error(exc)}"))
            return []
        records: list[tuple[Any, ...]] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                row = (cell_id, *(record[k] for k in STEP_COLUMNS[1:]))
                records.append(row + tuple(record.get(k) for k in PHASE_STEP_COLUMNS))
            except (ValueError, KeyError, TypeError):
                self.skipped.append((path, f"line {number}: not a step record"))
                return []
        return records


def _read_mapping(path: Path, parse: Any, what: str, problems: list[str] | None) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        problem = f"cannot read {path}: {describe_os_error(exc)}"
    except (ValueError, yaml.YAMLError) as exc:
        problem = f"{path}: not a valid {what}: {exc}"
    else:
        return data if isinstance(data, dict) else {}
    if problems is None:
        raise ResultsError(problem)
    problems.append(problem)
    return {}


def holds_sweep(path: Path) -> bool:
    """Whether `path` is a benchmark sweep's folder: its results (`cells/`), its state
    (`sweep.json`) or the spec of a cell it started (`specs/`: stopped before a first result,
    before sweeps kept a state file). The one test of it: the report, the loader and predict
    ask here."""
    layout = ResultLayout(path)
    try:
        return (
            layout.cells_dir.is_dir()
            or layout.sweep_state_path.is_file()
            or layout.specs_dir.is_dir()
        )
    except OSError:
        return False


def load(path: str | Path, metadata_problems: list[str] | None = None) -> Experiment:
    """Read the results directory of one experiment (`<output>/<experiment_name>`).

    An unreadable cell file is skipped with a one-line reason (in `skipped` and the log); one of
    another schema version stops the read (`VersionError`). A config.yaml
    or env.json that cannot be read raises ResultsError, or, given `metadata_problems`, reads as
    empty with its reason added there (the report still shows the cells).
    """
    layout = ResultLayout(Path(path))
    root = layout.root
    if not holds_sweep(root):
        inner = sorted(p.name for p in root.iterdir() if holds_sweep(p)) if root.is_dir() else []
        names = ", ".join(inner)
        hint = f"; it holds experiment(s) {names}: pass one" if inner else ""
        raise ResultsError(f"{root} is not a torchscale results directory (no cells/){hint}")
    problems = metadata_problems
    config = _read_mapping(layout.config_path, yaml.safe_load, "YAML config", problems)
    environment = _read_mapping(layout.environment_path, json.loads, "JSON environment", problems)
    results, skipped = read_cells(layout)
    sweep = None
    if layout.sweep_state_path.is_file():
        state = read_sweep_state(layout.sweep_state_path)
        sweep = state.doc
        if state.problem is not None:
            skipped.append((layout.sweep_state_path, state.problem))
    for file, reason in skipped:
        log.warning("skipping %s: %s", file, reason)
    started = sorted(p.stem for p in layout.specs_dir.glob("*.json"))
    done = {r.cell_id for r in results}
    signals = {i: _signal_of(layout.log_dir(i) / "error.json") for i in started if i not in done}
    signalled = {i: number for i, number in signals.items() if number is not None}
    return Experiment(root, config, environment, results, skipped, sweep, started, signalled)


def _signal_of(error_file: Path) -> int | None:
    """The signal torchrun's error file says stopped the cell ('SignalException: Process
    2320 got signal: 15'), or None: no file, another error, or unreadable."""
    try:
        doc = json.loads(error_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    message = doc.get("message") if isinstance(doc, dict) else None
    text = message.get("message") if isinstance(message, dict) else message
    found = re.search(r"got signal: (\d+)", text) if isinstance(text, str) else None
    return int(found.group(1)) if found else None
