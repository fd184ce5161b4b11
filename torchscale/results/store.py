"""The results directory of one experiment. Every file is written atomically.

results/<experiment>/
  config.yaml  env.json  summary.csv
  cells/<cell_id>.json     one CellResult per cell (schema-versioned)
  steps/<cell_id>.jsonl    per-step records (rank, window, repeat, step, time_s)
  logs/<cell_id>/          torchrun log, per-rank logs, torchelastic error file
  specs/<cell_id>.json     what the worker was asked to run
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from torchscale.atomic import write_text_atomic
from torchscale.config.schema import BenchConfig
from torchscale.config.yaml_source import dump_yaml
from torchscale.results.schema import CellResult

log = logging.getLogger(__name__)


class ResultStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def for_experiment(cls, output_dir: Path, experiment: str) -> ResultStore:
        return cls(output_dir / experiment)

    def cell_path(self, cell_id: str) -> Path:
        return self.root / "cells" / f"{cell_id}.json"

    def steps_path(self, cell_id: str) -> Path:
        return self.root / "steps" / f"{cell_id}.jsonl"

    def log_dir(self, cell_id: str) -> Path:
        return self.root / "logs" / cell_id

    def spec_path(self, cell_id: str) -> Path:
        return self.root / "specs" / f"{cell_id}.json"

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.csv"

    def write_config(self, config: BenchConfig) -> None:
        write_text_atomic(self.root / "config.yaml", dump_yaml(config.model_dump(mode="json")))

    def write_environment(self, environment: dict[str, Any]) -> None:
        write_text_atomic(self.root / "env.json", json.dumps(environment, indent=2))

    def write_cell(self, result: CellResult) -> Path:
        return write_text_atomic(self.cell_path(result.cell_id), result.model_dump_json(indent=2))

    def read_cell(self, cell_id: str) -> CellResult | None:
        """The stored result of a cell, or None when absent or unreadable (then it reruns)."""
        path = self.cell_path(cell_id)
        if not path.exists():
            return None
        try:
            return CellResult.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("ignoring unreadable result %s: %s", path, exc)
            return None

    def finished_ok(self, cell_id: str, definition_sha256: str) -> CellResult | None:
        """The stored result when it is `ok` for exactly this cell definition (for --resume)."""
        result = self.read_cell(cell_id)
        if result and result.status == "ok" and result.definition_sha256 == definition_sha256:
            return result
        return None

    def all_cells(self) -> list[CellResult]:
        cells_dir = self.root / "cells"
        if not cells_dir.is_dir():
            return []
        results = [self.read_cell(p.stem) for p in sorted(cells_dir.glob("*.json"))]
        return [r for r in results if r is not None]
