"""docs/python-api.md's notebook recipe, executed against real results, so the documented API
cannot drift from the code. Its `python` blocks run in order in one namespace, as notebook cells
would; the results path is pointed at the schema-3 fixture."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "python-api.md"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu_sweep_profile" / "v3_fixture"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_recipe_runs_on_real_results() -> None:
    code = blocks()
    assert len(code) >= 4
    namespace: dict[str, Any] = {}
    for block in code:
        block = block.replace('"results/default_scaling"', repr(str(FIXTURE)))
        exec(compile(block, str(DOC), "exec"), namespace)
    # the figures and tables hold the fixture's data, not empty frames
    throughput = namespace["throughput"]
    assert {trace.name for trace in throughput.data} >= {"tiny-mlp b8", "tiny-gpt2 b8"}
    efficiency = namespace["efficiency"]
    assert isinstance(efficiency, pd.DataFrame)
    assert efficiency.loc[1].dropna().eq(1.0).all()  # the base of every group is 1.0
    assert len(namespace["distribution"].data) >= 2
    phases = namespace["phases"]
    assert list(phases.index) == [0, 1]
    assert phases["backward_s"].notna().all()
    assert namespace["tables"][0].rows != []
    text_report = namespace["text_report"]
    assert text_report.outcome.path is None and b"Scaling" in text_report.outcome.content
