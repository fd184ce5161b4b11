"""Results: the versioned cell schema, the atomic store, and `load` (every version, as pandas).

`load` and `Experiment` are imported lazily so that the worker ranks, which only write results,
never pay for importing pandas.

Layer 1 (contracts) of docs/architecture.md: imports only other contracts, except the
derived columns `load` adds with analysis functions (debt: tests/test_architecture.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchscale.results.experiment import Experiment, load

__all__ = ["Experiment", "load"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from torchscale.results import experiment

        return getattr(experiment, name)
    raise AttributeError(name)
