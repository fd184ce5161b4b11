"""`torchscale.results.load`, the public name of the results reader (docs/python-api.md):
`load` and `Experiment` of `torchscale.offline.results`, under the name notebooks import. It only
re-exports (Layer 4, entry points, of docs/architecture.md). Imported lazily, so that importing
this module does not import pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscale.offline.results import __getattr__ as __getattr__  # Experiment, load: lazily
from torchscale.offline.results.forecast_store import load_forecasts

if TYPE_CHECKING:
    from torchscale.offline.results.experiment import Experiment, load

__all__ = ["Experiment", "load", "load_forecasts"]
