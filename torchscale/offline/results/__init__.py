"""Results: the results directory (`ResultStore`), reading each stored kind at its version, and
`load` (as pandas, with the derived columns the analysis layer defines).

`load` and `Experiment` are imported lazily so that the worker ranks, which only write results,
never pay for importing pandas.

Imports contracts (the schemas in `torchscale.contracts.schema`) and the analysis layer; rank 0
writes through `ResultStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchscale.offline.results.experiment import Experiment, load

__all__ = ["Experiment", "load"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from torchscale.offline.results import experiment

        return getattr(experiment, name)
    raise AttributeError(name)
