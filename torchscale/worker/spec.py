"""The cell description the sweep hands to every rank (a JSON file named on the command line)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from torchscale.config.schema import DataConfig, MeasurementConfig, ModelSpec, TrainingConfig


class WorkerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell_id: str
    definition_sha256: str
    model: ModelSpec
    batch_size: int
    world_size: int
    precision: str
    strategy: str
    device: str
    backend: str
    training: TrainingConfig
    measurement: MeasurementConfig
    data: DataConfig
    result_path: str
    steps_path: str
