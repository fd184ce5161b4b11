"""Memory suite: the largest batch that fits (`memory.max_batch_search`, docs/memory.md).

Names are imported lazily: the search needs the sweep's launch path (and pandas), which a
reader of the results alone should not pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchscale.contracts.schema.max_batch import MaxBatchResult
    from torchscale.offline.results.documents import read_max_batch
    from torchscale.offline.results.max_batch_table import load_max_batch
    from torchscale.orchestration.memory.max_batch_runs import SearchGroup, run_max_batch_search
    from torchscale.orchestration.memory.search import ProbeOutcome, SearchOutcome, search_max_batch

_WHERE = {
    "MaxBatchResult": "torchscale.contracts.schema.max_batch",
    "load_max_batch": "torchscale.offline.results.max_batch_table",
    "read_max_batch": "torchscale.offline.results.documents",
    "SearchGroup": "torchscale.orchestration.memory.max_batch_runs",
    "run_max_batch_search": "torchscale.orchestration.memory.max_batch_runs",
    "ProbeOutcome": "torchscale.orchestration.memory.search",
    "SearchOutcome": "torchscale.orchestration.memory.search",
    "search_max_batch": "torchscale.orchestration.memory.search",
}
__all__ = [
    "MaxBatchResult",
    "ProbeOutcome",
    "SearchGroup",
    "SearchOutcome",
    "load_max_batch",
    "read_max_batch",
    "run_max_batch_search",
    "search_max_batch",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(name)
