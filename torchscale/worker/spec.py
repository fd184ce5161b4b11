"""The cell description the sweep hands to every rank (a JSON file named on the command line)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from torchscale.cell import CellIdentity
from torchscale.config.schema import DataConfig, MeasurementConfig, ModelSpec, TrainingConfig


class WorkerSpec(BaseModel):
    """What one rank needs: the cell's identity, how to build and train it, where to write."""

    model_config = ConfigDict(extra="forbid")

    cell: CellIdentity
    model: ModelSpec  # name and architecture options (the identity holds name and label)
    training: TrainingConfig
    measurement: MeasurementConfig
    data: DataConfig
    result_path: str
    steps_path: str
