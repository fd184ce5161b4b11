"""A plug-in's own batches (`ModelBundle.batches`): the contract, the stream the
trainer draws one batch per micro-batch from, and one real 2-rank cell whose rank 1 has a slow
loader, seen in the steps table as that rank's data phase.

The plug-ins are tests/plugin_batch_models.py; the real run reaches them through PYTHONPATH set
in `launcher.env`, as tests/e2e/test_sweep.py does with its fault models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from typer.testing import CliRunner

import torchscale.results
from tests import plugin_batch_models as models
from tests.processes import REPO_ROOT
from torchscale.contracts.cell import CellIdentity
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.errors import DataError, ModelError
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.interfaces.cli.app import app
from torchscale.rank.data.input_pipeline import SETTINGS_KEY
from torchscale.rank.data.plugin_batches import (
    DRAWN,
    NOT_MODEL_PARALLEL,
    NOT_READ,
    PluginBatches,
    plugin_batches,
)
from torchscale.rank.models import load_plugin
from torchscale.rank.worker.aggregate import NOTHING_READ, CellFacts, data_pipeline
from torchscale.rank.worker.trainer import Trainer

CPU = torch.device("cpu")
META = torch.device("meta")  # a device other than the batches' own, with no memory behind it


def numbers(batch: tuple[Any, Any]) -> int:
    """Which of counting_batches' batches this is."""
    return int(batch[0][0, 0].item())


# ================================================================================== the contract


def test_a_four_tuple_gives_its_batches() -> None:
    bundle = load_plugin("tests.plugin_batch_models:four_tuple")
    assert bundle.batches is models.counting_batches
    assert load_plugin("tests.plugin_models:factory").batches is None  # 3-tuple: none


def test_a_bundle_keeps_its_batches() -> None:
    bundle = load_plugin("tests.plugin_batch_models:bundle")
    assert bundle.batches is models.counting_batches


@pytest.mark.parametrize(
    ("factory", "says"),
    [
        ("four_tuple_not_callable", "batches is a list, not a callable"),
        ("bundle_not_callable", "ModelBundle.batches is a str, not a callable"),
    ],
)
def test_batches_that_are_not_callable_are_refused_in_one_line(factory: str, says: str) -> None:
    with pytest.raises(ModelError) as caught:
        load_plugin(f"tests.plugin_batch_models:{factory}")
    message = str(caught.value)
    assert message == f"model plug-in 'tests.plugin_batch_models:{factory}': {says}"
    assert "\n" not in message


def test_a_five_tuple_is_still_refused() -> None:
    with pytest.raises(ModelError, match=r"a tuple of 5 items; expected a ModelBundle"):
        load_plugin("tests.plugin_batch_models:five_tuple")


# ==================================================================================== the stream


def test_each_draw_is_the_next_batch_and_the_end_starts_a_new_epoch() -> None:
    stream = PluginBatches(models.counting_batches, 2, CPU)
    drawn = [numbers(stream.next_batch()) for _ in range(7)]
    assert drawn == [0, 1, 2, 0, 1, 2, 0]
    assert stream.epoch == 2


def test_a_one_shot_iterator_is_made_again_each_epoch() -> None:
    calls: list[int] = []

    def generator(batch_size: int, device: torch.device) -> Iterator[tuple[Any, Any]]:
        calls.append(batch_size)
        return iter(models.counting_batches(batch_size, device)[:2])

    stream = PluginBatches(generator, 3, CPU)
    assert calls == [3]  # made at set-up, under the rank's data seed
    assert [numbers(stream.next_batch()) for _ in range(5)] == [0, 1, 0, 1, 0]
    assert calls == [3, 3, 3]


def test_batches_are_moved_to_the_device_lists_as_tuples() -> None:
    def nested(batch_size: int, device: torch.device) -> list[Any]:
        x = torch.ones(batch_size, 2)
        # as a DataLoader's default collate gives a dataset's ((a, b), {"mask": m}) samples
        return [[[[x, x], {"mask": x, "name": "kept"}], x]]

    inputs, targets = PluginBatches(nested, 2, META).next_batch()
    assert isinstance(inputs, tuple) and isinstance(inputs[0], tuple)
    assert [t.device for t in inputs[0]] == [META, META]
    assert inputs[1]["mask"].device == META and inputs[1]["name"] == "kept"
    assert targets.device == META
    on_cpu = PluginBatches(models.counting_batches, 2, CPU).next_batch()[0]
    assert on_cpu.device == CPU


def test_a_distributed_samplers_epoch_is_set_at_each_restart() -> None:
    dataset = TensorDataset(torch.arange(8.0).view(4, 2), torch.zeros(4))
    sampler: DistributedSampler[Any] = DistributedSampler(dataset, num_replicas=1, rank=0)
    loader = DataLoader(dataset, batch_size=2, sampler=sampler)
    stream = PluginBatches(lambda b, d: loader, 2, CPU)
    for _ in range(5):  # 2 batches an epoch: the fifth draw is in the third epoch
        stream.next_batch()
    assert sampler.epoch == 2


@pytest.mark.parametrize(
    ("factory", "says"),
    [
        (lambda b, d: [], "gave no batch in epoch 1"),
        (lambda b, d: [(1, 2, 3)], "gave a tuple of 3 items; expected (inputs, targets)"),
    ],
)
def test_a_batch_the_step_cannot_use_is_one_line(factory: Any, says: str) -> None:
    with pytest.raises(DataError, match=says.replace("(", r"\(").replace(")", r"\)")):
        PluginBatches(factory, 2, CPU).next_batch()


def test_a_broken_factory_fails_at_set_up() -> None:
    def broken(batch_size: int, device: torch.device) -> Any:
        raise FileNotFoundError("/data/train")

    with pytest.raises(DataError, match=r"batches\(2, cpu\) failed: FileNotFoundError"):
        PluginBatches(broken, 2, CPU)
    with pytest.raises(DataError, match=r"returned a int, not an iterable"):
        PluginBatches(lambda b, d: 3, 2, CPU)  # type: ignore[arg-type,return-value]


def test_close_stops_a_generator() -> None:
    closed: list[bool] = []

    def generator(batch_size: int, device: torch.device) -> Iterator[tuple[Any, Any]]:
        try:
            yield from models.counting_batches(batch_size, device)
        finally:
            closed.append(True)

    stream = plugin_batches(generator, 2, CPU)
    stream.next_batch()
    stream.close()
    stream.close()  # idempotent
    assert closed == [True]
    assert stream.info == {"source": "plug-in batches", "notes": [DRAWN], "not_read": NOT_READ}


# ============================================================== the trainer, one rank in-process


@pytest.fixture()
def process_group(tmp_path: Path) -> Iterator[None]:
    """A 1-rank gloo group, as torchrun would give a world-size-1 cell."""
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def spec_of(model: str) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model=model,
            label=model,
            batch_size=2,
            world_size=1,
            precision="fp32",
            strategy="ddp",
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name=model),
        training=TrainingConfig(),
        measurement=MeasurementConfig(steps=2, repeats=1, warmup_steps=0),
        data=DataConfig(),
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


@pytest.mark.usefixtures("process_group")
def test_the_trainer_draws_a_plug_in_batch_per_micro_batch() -> None:
    trainer = Trainer.build(spec_of("tests.plugin_batch_models:four_tuple"), CPU)
    assert isinstance(trainer.pipeline, PluginBatches)
    assert trainer.settings[SETTINGS_KEY]["source"] == "plug-in batches"
    assert trainer.inputs is None
    drawn = [numbers(trainer.next_batch()) for _ in range(4)]
    assert drawn == [0, 1, 2, 0]
    trainer.step()  # the batch reaches the model as make_batch's would
    trainer.close()


@pytest.mark.usefixtures("process_group")
def test_without_batches_the_trainer_reuses_make_batch() -> None:
    trainer = Trainer.build(spec_of("tests.plugin_models:factory"), CPU)
    assert trainer.pipeline is None and SETTINGS_KEY not in trainer.settings
    first, again = trainer.next_batch(), trainer.next_batch()
    assert first[0] is again[0]


@pytest.mark.parametrize(
    ("info", "notes", "not_read"),
    [
        (None, [], NOTHING_READ),  # make_batch's batch: nothing to say
        ({"source": "plug-in batches", "notes": [DRAWN], "not_read": NOT_READ}, [DRAWN], NOT_READ),
        ({"notes": [NOT_MODEL_PARALLEL]}, [NOT_MODEL_PARALLEL], NOTHING_READ),  # tp, pp, hybrid
    ],
)
def test_the_result_says_where_a_synthetic_cells_batches_came_from(
    info: dict[str, Any] | None, notes: list[str], not_read: str
) -> None:
    environment = {SETTINGS_KEY: info} if info is not None else {}
    facts = CellFacts(1, "other", None, "cpu", None, None, environment, False, False)
    phases: dict[int, dict[str, float | None] | None] = {0: {"data": 0.03}, 1: {"data": 0.001}}
    data, why_not = data_pipeline(
        spec_of("tests.plugin_batch_models:four_tuple"), phases, 0.04, 1.0, 2, 3, facts
    )
    assert data.source == "synthetic" and data.notes == notes
    assert data.wait_s == 0.03 and data.wait_s_per_rank == [0.03, 0.001]
    assert why_not == {"data.read_bytes_per_s": not_read}


# ========================================================== a real 2-rank cell with a slow loader

SLEEP_MS = 30.0


@pytest.mark.slow
def test_a_slow_loader_on_rank_1_shows_as_its_data_phase(tmp_path: Path) -> None:
    """tests.plugin_batch_models:sleepy sleeps 30 ms per batch on rank 1 only, from a generator
    of 3 batches (so the run also restarts epochs): rank 1's median data phase must stand out
    by about that much. Bounds are generous: this machine is shared and loaded."""
    config = tmp_path / "loader.yaml"
    config.write_text(
        json.dumps(
            {
                "experiment_name": "loader",
                "device": "cpu",
                "models": [
                    {
                        "name": "tests.plugin_batch_models:sleepy",
                        "options": {"sleep_ms": SLEEP_MS, "on_rank": 1},
                    }
                ],
                "batch_sizes": [4],
                "gpu_counts": [2],
                "measurement": {"warmup_steps": 1, "steps": 6, "repeats": 1},
                "launcher": {"env": {"PYTHONPATH": str(REPO_ROOT)}, "cell_timeout_s": 120},
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "results"
    run = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(out)])
    assert run.exit_code == 0, run.output
    experiment = torchscale.results.load(out / "loader")
    assert list(experiment.cells["status"]) == ["ok"]
    steps = experiment.steps
    sync = steps[steps["window"] == "sync"]
    data = sync.groupby("rank")["data_s"].median()
    assert data[1] - data[0] >= 0.020, data.to_dict()
    assert data[1] < 0.5, data.to_dict()  # about 30 ms, not a batch made once per cell
    [cell_id] = list(experiment.cells["cell_id"])
    result = experiment.result(cell_id)
    assert result.data is not None
    assert result.data.source == "synthetic" and DRAWN in result.data.notes
    assert result.unavailable["data.read_bytes_per_s"] == NOT_READ
