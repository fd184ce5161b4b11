"""The input pipeline (docs/data.md): disk shards (generation, manifest, cache, disk-full
clean-up), the CIFAR-100 reader on a tiny file in the real format, loader batches shaped like
the synthetic ones, the data figures of a cell, and one real 2-rank torchrun cell reading shards.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import statistics
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

import torchscale.results
from tests.processes import live_children, processes_mentioning
from torchscale.contracts.cell import CellIdentity, Status
from torchscale.contracts.cell_settings import (
    DataConfig,
    MeasurementConfig,
    ModelSpec,
    TrainingConfig,
)
from torchscale.contracts.errors import DataError
from torchscale.contracts.finding import Finding
from torchscale.contracts.model_tasks import unsupported
from torchscale.contracts.wording import say, why
from torchscale.contracts.worker_spec import WorkerSpec
from torchscale.interfaces.cli.app import app
from torchscale.offline.results.frame import COLUMNS
from torchscale.orchestration.plan.build import build_plan
from torchscale.orchestration.plan.nodes import Machine
from torchscale.rank.data import shards
from torchscale.rank.data.cifar100 import URL, load_train
from torchscale.rank.data.input_pipeline import build_pipeline, layout_for
from torchscale.rank.data.prepare import prepare_data
from torchscale.rank.models import build_model
from torchscale.rank.worker.aggregate import DATA_KEY, CellFacts, aggregate
from torchscale.rank.worker.measure import RankMeasurement, Window

MB = 10**6
CPU = torch.device("cpu")


# ================================================================================ shards


def test_generate_writes_shards_and_manifest(tmp_path: Path) -> None:
    got = shards.ensure_shards(tmp_path, shard_mb=1, num_shards=3, seed=7)
    assert got.generated and got.note is None
    assert [p.name for p in got.paths] == ["shard_0000.bin", "shard_0001.bin", "shard_0002.bin"]
    assert all(p.stat().st_size == MB for p in got.paths)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["format_version"] == shards.FORMAT_VERSION
    assert (manifest["shard_mb"], manifest["num_shards"], manifest["seed"]) == (1, 3, 7)
    assert [s["bytes"] for s in manifest["shards"]] == [MB] * 3
    # random bytes, different per shard, reproducible from the seed
    first, second = (p.read_bytes() for p in got.paths[:2])
    assert first != second and len(set(first[:4096])) > 200
    again = shards.ensure_shards(tmp_path / "again", shard_mb=1, num_shards=1, seed=7)
    assert again.paths[0].read_bytes() == first
    assert not list(tmp_path.glob(".*.tmp"))


def test_same_parameters_reuse_the_cache(tmp_path: Path) -> None:
    shards.ensure_shards(tmp_path, 1, 2)
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    got = shards.ensure_shards(tmp_path, 1, 2)
    assert not got.generated
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps


def test_changed_parameters_regenerate_with_a_note(tmp_path: Path) -> None:
    shards.ensure_shards(tmp_path, 1, 2)
    got = shards.ensure_shards(tmp_path, 1, 3)
    assert got.generated
    assert got.note is not None and "num_shards was 2, now 3" in got.note
    assert json.loads((tmp_path / "manifest.json").read_text())["num_shards"] == 3


@pytest.mark.parametrize("where", ["start", "end", "truncated"])
def test_a_corrupt_shard_is_regenerated(tmp_path: Path, where: str) -> None:
    shards.ensure_shards(tmp_path, 2, 1)
    path = tmp_path / "shard_0000.bin"
    original = path.read_bytes()
    data = bytearray(original)
    if where == "truncated":
        data = data[:-10]
    else:
        index = 0 if where == "start" else len(data) - 1
        data[index] ^= 0xFF
    path.write_bytes(bytes(data))
    got = shards.ensure_shards(tmp_path, 2, 1)
    assert got.generated and got.note is not None and "shard_0000.bin" in got.note
    assert path.read_bytes() == original


def _full_after(shards_ok: int, code: int = errno.ENOSPC) -> Any:
    """A write_chunk that writes `shards_ok` shards, then fails part-way into the next."""
    calls = {"chunks": 0}
    per_shard = MB // shards.CHUNK_BYTES + 1

    def write_chunk(handle: IO[bytes], data: bytes) -> None:
        calls["chunks"] += 1
        if calls["chunks"] > shards_ok * per_shard:
            handle.write(data[:1000])
            raise OSError(code, os.strerror(code))
        handle.write(data)

    return write_chunk


def test_disk_full_removes_this_generations_shards_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    other = tmp_path / "shard_0009.bin"  # not part of this generation
    other.write_bytes(b"x")
    monkeypatch.setattr(shards, "write_chunk", _full_after(2))
    with pytest.raises(DataError) as caught:
        shards.ensure_shards(tmp_path, 1, 4)
    message = str(caught.value)
    assert "\n" not in message
    assert f"data.dir {tmp_path}: disk full while writing shard_0002.bin" in message
    assert "needs 4 MB for 4 x 1 MB" in message and "partial shards removed" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "shard_0009.bin"]
    assert keep.read_text() == "mine" and other.read_bytes() == b"x"


def test_other_write_errors_are_one_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards, "write_chunk", _full_after(0, errno.EIO))
    with pytest.raises(DataError, match=r"cannot write shard_0000\.bin: .*\(EIO\)"):
        shards.ensure_shards(tmp_path, 1, 2)
    assert list(tmp_path.iterdir()) == []


def test_not_enough_space_fails_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards, "_free_bytes", lambda directory: 500_000)
    with pytest.raises(DataError, match=r"needs 2 MB, 0 MB free\); nothing written"):
        shards.ensure_shards(tmp_path, 1, 2)
    assert list(tmp_path.iterdir()) == []


def test_eviction_works_without_root(tmp_path: Path) -> None:
    got = shards.ensure_shards(tmp_path, 1, 1)
    assert shards.evict(got.paths) is None


def test_files_whose_pages_could_not_be_dropped_are_named_as_figures(tmp_path: Path) -> None:
    failed = shards.evict([tmp_path / "gone.bin"])
    assert isinstance(failed, Finding) and failed.code == "data.cache_not_dropped"
    assert [f.split(":")[0] for f in failed.figures["failed"]] == ["gone.bin"]


# ============================================================================== CIFAR-100


def write_cifar(directory: Path, count: int = 6, replace: dict[bytes, Any] | None = None) -> Path:
    """A `train` file as the CIFAR-100 python archive has it (protocol 2, bytes keys);
    `replace` overrides entries (None removes one)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    content: dict[bytes, Any] = {
        b"filenames": [f"img{i}.png".encode() for i in range(count)],
        b"batch_label": b"training batch 1 of 1",
        b"fine_labels": [int(v) for v in rng.integers(0, 100, count)],
        b"coarse_labels": [int(v) for v in rng.integers(0, 20, count)],
        b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
    }
    for key, value in (replace or {}).items():
        if value is None:
            del content[key]
        else:
            content[key] = value
    path = directory / "train"
    path.write_bytes(pickle.dumps(content, protocol=2))
    return path


def test_cifar_reader_reads_the_python_format(tmp_path: Path) -> None:
    path = write_cifar(tmp_path)
    train = load_train(tmp_path)
    assert len(train) == 6 and train.images.shape == (6, 3, 32, 32)
    assert train.images.dtype == np.uint8 and train.labels.dtype == np.int64
    raw = pickle.loads(path.read_bytes())
    # row-major RGB planes: the first 1024 bytes are the red plane of image 0
    assert np.array_equal(train.images[0, 0].reshape(-1), raw[b"data"][0, :1024])
    assert train.labels.tolist() == raw[b"fine_labels"]
    assert train.file_bytes == path.stat().st_size


def test_cifar_missing_files_say_where_to_put_them(tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        load_train(tmp_path / "nowhere")
    assert "does not exist" in str(caught.value) and URL in str(caught.value)
    with pytest.raises(DataError) as caught:
        load_train(tmp_path)
    message = str(caught.value)
    assert f"{tmp_path / 'train'} is missing" in message
    assert "files train, test, meta" in message and URL in message and "\n" not in message


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(_Evil.marker),))

    marker = Path("/nonexistent")


def test_cifar_reader_never_runs_code_from_the_file(tmp_path: Path) -> None:
    _Evil.marker = tmp_path / "pwned"
    (tmp_path / "train").write_bytes(pickle.dumps({b"data": _Evil()}, protocol=2))
    with pytest.raises(DataError, match=r"not a CIFAR-100 python file \(refused global posix"):
        load_train(tmp_path)
    assert not _Evil.marker.exists()


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        ({b"fine_labels": None}, "no 'data' and 'fine_labels'"),
        ({b"data": np.zeros((6, 100), np.uint8)}, "not uint8 N x 3072"),
        ({b"fine_labels": [0, 1]}, "2 labels for 6 images"),
        ({b"fine_labels": [100] * 6}, "fine labels outside 0..99"),
    ],
)
def test_cifar_reader_rejects_malformed_files(
    tmp_path: Path, replace: dict[bytes, Any], expected: str
) -> None:
    write_cifar(tmp_path, replace=replace)
    with pytest.raises(DataError, match=expected):
        load_train(tmp_path)


def test_cifar_reader_rejects_a_file_that_is_not_a_pickle(tmp_path: Path) -> None:
    (tmp_path / "train").write_bytes(b"\x89PNG not a pickle")
    with pytest.raises(DataError, match="is not a CIFAR-100 python file"):
        load_train(tmp_path)


# ================================================================= loader batches and plan


def pipeline_for(model: str, data: DataConfig, batch: int = 4, options: Any = None) -> Any:
    bundle = build_model(model, options, seq_len=data.seq_len, image_size=data.image_size)
    layout = layout_for(model, options, bundle, data.seq_len, data.image_size)
    pipeline = build_pipeline(data, layout, model, batch, CPU, 0, 1, seed=0)
    return bundle, pipeline


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.dtype)
    return tuple(_signature(v) for v in value)


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("shards")
    shards.ensure_shards(directory, 1, 2)
    return directory


@pytest.mark.parametrize(
    "model", ["tiny-cnn", "tiny-gpt2", "tiny-mlp", "tiny-bert", "tiny-transformer"]
)
def test_disk_batches_are_shaped_like_synthetic_ones(shard_dir: Path, model: str) -> None:
    data = DataConfig(source="disk", dir=str(shard_dir), num_workers=0)
    bundle, pipeline = pipeline_for(model, data)
    synthetic = bundle.make_batch(4, CPU)
    batch = pipeline.next_batch()
    assert _signature(batch) == _signature(synthetic)
    loss = bundle.step_loss(*batch)  # valid ids and labels: the loss is finite
    assert torch.isfinite(loss)
    if model == "tiny-cnn":
        assert batch[0].min() >= -1.0 and batch[0].max() <= 1.0
        assert batch[0].unique().numel() > 100  # read from the shards, not a constant


def test_masked_tokens_mark_about_15_percent(shard_dir: Path) -> None:
    data = DataConfig(source="disk", dir=str(shard_dir), num_workers=0)
    _, pipeline = pipeline_for("tiny-bert", data, batch=32)
    tokens, targets = pipeline.next_batch()
    chosen = targets != -100
    assert chosen[:, 0].all()
    assert 0.10 < chosen[:, 1:].float().mean().item() < 0.20
    assert torch.equal(targets[chosen], tokens[chosen])


@pytest.mark.slow  # starts a child process
def test_the_loader_restarts_at_the_end_of_an_epoch_and_stops_its_workers(
    shard_dir: Path,
) -> None:
    data = DataConfig(source="disk", dir=str(shard_dir), num_workers=1, prefetch_factor=2)
    _, pipeline = pipeline_for("tiny-cnn", data, batch=64)
    per_epoch = pipeline.info["samples"] // 64  # 650 samples of 3,074 bytes: 10 batches
    assert per_epoch == 10
    before = set(live_children())
    seen = [pipeline.next_batch() for _ in range(per_epoch + 2)]
    assert pipeline.epoch == 1 and len(seen) == per_epoch + 2
    assert set(live_children()) - before  # a worker process ran the loading
    pipeline.close()
    assert set(live_children()) <= before
    pipeline.close()  # idempotent


def test_the_loader_restarts_at_the_end_of_an_epoch_without_workers(shard_dir: Path) -> None:
    """The same in this process (num_workers=0): the draw after the last full batch starts
    epoch 1, its sampler told so; closing a loader with no workers does nothing, twice."""
    data = DataConfig(source="disk", dir=str(shard_dir), num_workers=0)
    _, pipeline = pipeline_for("tiny-cnn", data, batch=64)
    per_epoch = pipeline.info["samples"] // 64
    assert per_epoch >= 2
    seen = [pipeline.next_batch() for _ in range(per_epoch)]
    assert pipeline.epoch == 0 and pipeline.sampler.epoch == 0
    seen += [pipeline.next_batch() for _ in range(2)]
    assert pipeline.epoch == 1 and pipeline.sampler.epoch == 1 and len(seen) == per_epoch + 2
    assert all(images.shape[0] == 64 for images, _ in seen)
    pipeline.close()
    pipeline.close()


def test_cifar_batches_are_resized_and_labels_folded(tmp_path: Path) -> None:
    write_cifar(tmp_path, count=10)
    data = DataConfig(source="cifar100", dir=str(tmp_path), num_workers=0, image_size=48)
    bundle, pipeline = pipeline_for("tiny-cnn", data)
    images, labels = pipeline.next_batch()
    assert _signature((images, labels)) == _signature(bundle.make_batch(4, CPU))
    assert images.shape[-1] == 48 and labels.max() < 10
    folded = Finding(code="data.labels_mod", figures={"classes": 10, "dataset_classes": 100})
    assert pipeline.info["notes"] == [Finding(code="data.cifar_in_memory"), folded]
    assert say(folded).startswith("labels taken mod 10 (the model has 10 classes, CIFAR-100 100)")
    assert pipeline.info["samples"] == 10


def test_a_dataset_too_small_for_the_batch_is_a_clear_error(shard_dir: Path) -> None:
    data = DataConfig(source="disk", dir=str(shard_dir), num_workers=0)
    with pytest.raises(DataError, match=r"fewer than 1 rank\(s\) x batch 1000"):
        pipeline_for("tiny-cnn", data, batch=1000)


def test_unsupported_pairs_are_skipped_before_launch(tmp_path: Path) -> None:
    assert unsupported("synthetic", "pkg.mod:factory") is None
    assert unsupported("disk", "gpt2") is None
    images = unsupported("cifar100", "tiny-gpt2")
    assert images is not None and images.code == "plan.data_images_only"
    assert images.figures["source"] == "cifar100" and "tiny-cnn" in images.figures["models"]
    assert "feeds image models only (" in say(images)
    plugin = unsupported("disk", "pkg.mod:factory")
    assert plugin == Finding(code="plan.data_synthetic_only", figures={"source": "disk"})
    assert say(plugin) == (
        "plug-in models train on synthetic data only (their batch format is their own); "
        "data.source 'disk' cannot feed them"
    )
    from torchscale.orchestration.config.schema import BenchConfig

    config = BenchConfig.model_validate(
        {
            "experiment_name": "pairs",
            "models": ["tiny-cnn", "tiny-gpt2"],
            "batch_sizes": [8],
            "gpu_counts": [1],
            "device": "cpu",
            "data": {"source": "cifar100", "dir": str(tmp_path)},
        }
    )
    plan = build_plan(config, Machine(gpu_count=0, cpu_cores=2))
    skips = {p.cell.model: p.skip_reason for p in plan}
    assert skips["tiny-cnn"] is None
    assert skips["tiny-gpt2"] is not None and "image models only" in skips["tiny-gpt2"]


def test_prepare_data_generates_then_finds_the_cache(tmp_path: Path) -> None:
    data = DataConfig(source="disk", dir=str(tmp_path / "d"), shard_mb=1, num_shards=2)
    first = prepare_data(data)
    second = prepare_data(data)
    assert first is not None and second is not None
    assert first.message.startswith("data: generated: 2 shards x 1 MB")
    assert second.message.startswith("data: cached (manifest verified): 2 shards x 1 MB")
    assert prepare_data(DataConfig()) is None


def test_a_missing_cifar_dir_stops_the_sweep_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        json.dumps(
            {
                "experiment_name": "cifar",
                "device": "cpu",
                "models": ["tiny-cnn"],
                "batch_sizes": [4],
                "gpu_counts": [1],
                "data": {"source": "cifar100", "dir": str(tmp_path / "absent")},
            }
        )
    )
    result = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"data.dir {tmp_path / 'absent'} does not exist" in " ".join(result.output.split())
    assert not (tmp_path / "o" / "cifar" / "cells").exists() or not any(
        (tmp_path / "o" / "cifar" / "cells").iterdir()
    )


# ============================================================================== aggregate


def _spec(source: str = "disk", steps: int = 4) -> WorkerSpec:
    return WorkerSpec(
        cell=CellIdentity(
            id="cell",
            definition_sha256="0" * 64,
            model="tiny-cnn",
            label="tiny-cnn",
            batch_size=8,
            world_size=2,
            precision="fp32",
            strategy="ddp",
            device="cpu",
            backend="gloo",
        ),
        model=ModelSpec(name="tiny-cnn"),
        training=TrainingConfig(),
        measurement=MeasurementConfig(steps=steps, repeats=2, warmup_steps=1),
        data=DataConfig(source=source, dir=None if source == "synthetic" else "/d"),  # type: ignore[arg-type]
        result_path="/nonexistent/result.json",
        steps_path="/nonexistent/steps.jsonl",
    )


def _rank(rank: int, data_s: float, step_s: float = 0.1) -> RankMeasurement:
    phases: dict[str, list[float | None]] = {
        "data": [data_s] * 4,
        "forward": [0.03] * 4,
        "backward": [0.03] * 4,
        "grad_sync_wait": [0.001] * 4,
        "optimizer": [0.01] * 4,
    }
    return RankMeasurement(
        rank=rank,
        host="h",
        timing="perf_counter",
        steps=4,
        warmup_s=[0.1],
        windows=[Window(0.4, [step_s] * 4, phases), Window(0.5, [step_s] * 4, phases)],
    )


def _facts(info: dict[str, Any] | None) -> CellFacts:
    environment: dict[str, Any] = {"host": "h"}
    if info is not None:
        environment[DATA_KEY] = info
    cpu = Finding(code="peak.cpu")
    return CellFacts(1, "vision", None, "cpu", None, cpu, environment, False, False)


INFO = {
    "source": "disk",
    "num_workers": 2,
    "pin_memory": False,
    "prefetch_factor": 2,
    "dir": "/d",
    "dataset_bytes": 4_000_000,
    "samples": 1300,
    "record_bytes": 3074,
    "notes": [],
    "physical_memory_bytes": 8 * 10**9,
}


def test_the_cell_reports_the_slowest_ranks_data_wait_and_its_share() -> None:
    result = aggregate(_spec(), [_rank(0, 0.01), _rank(1, 0.03)], _facts(INFO))
    data = result.data
    assert data is not None and data.source == "disk"
    assert data.wait_s_per_rank == pytest.approx([0.01, 0.03])
    assert data.wait_s == pytest.approx(0.03)
    assert result.step_time is not None
    assert data.share == pytest.approx(0.03 / result.step_time.p50)
    assert (data.num_workers, data.pin_memory, data.prefetch_factor) == (2, False, 2)
    # bytes of the samples the windows consumed (2 ranks x 8 x 4 steps x 2 windows) / 0.9 s
    assert data.read_bytes_per_s == pytest.approx(3074 * 16 * 4 * 2 / 0.9)
    (cached,) = data.notes  # 4 MB < 8 GB of memory: a code and its figures
    assert isinstance(cached, Finding) and cached.code == "data.page_cache"
    assert cached.figures["memory_bytes"] == 8 * 10**9
    assert "page cache" in say(cached) and "(8.0 GB)" in say(cached)
    assert DATA_KEY not in result.environment
    assert not any(k.startswith("data") for k in result.unavailable)


def test_synthetic_cells_keep_their_data_wait_and_no_loader() -> None:
    result = aggregate(_spec("synthetic"), [_rank(0, 0.0001), _rank(1, 0.0002)], _facts(None))
    data = result.data
    assert data is not None and data.source == "synthetic"
    assert data.wait_s == pytest.approx(0.0002)
    assert data.num_workers is None and data.read_bytes_per_s is None
    assert "nothing is read" in str(why(result.unavailable["data.read_bytes_per_s"]))


# ====================================================================== one real torchrun


@pytest.fixture(scope="module")
def disk_sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("disk")
    config = tmp / "disk.yaml"
    config.write_text(
        json.dumps(
            {
                "experiment_name": "disk",
                "device": "cpu",
                "models": ["tiny-cnn"],
                "batch_sizes": [8],
                "gpu_counts": [2],
                "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
                "data": {
                    "source": "disk",
                    "dir": str(tmp / "data"),
                    "shard_mb": 1,
                    "num_shards": 2,
                    "num_workers": 1,
                },
                "launcher": {"cell_timeout_s": 120},
            }
        )
    )
    out = tmp / "results"
    result = CliRunner().invoke(app, ["benchmark", "-c", str(config), "-o", str(out)])
    exp = out / "disk"
    return {
        "result": result,
        "exp": exp,
        "data": tmp / "data",
        "leftovers": processes_mentioning(str(exp)),
    }


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_a_real_cell_reads_its_batches_from_disk(disk_sweep: dict[str, Any]) -> None:
    result = disk_sweep["result"]
    assert result.exit_code == 0, result.output
    assert disk_sweep["leftovers"] == []  # ranks and their loader workers are all gone
    assert sorted(p.name for p in disk_sweep["data"].iterdir()) == [
        "manifest.json",
        "shard_0000.bin",
        "shard_0001.bin",
    ]
    experiment = torchscale.results.load(disk_sweep["exp"])
    cells = experiment.cells
    assert list(cells["status"]) == ["ok"]
    row = cells.iloc[0]
    assert row["data_source"] == "disk"
    assert row["data_wait_s"] >= 0 and 0 <= row["data_wait_share"] < 1
    assert row["data_read_mb_per_s"] > 0
    assert {"cost_per_gpu_hour", "gpu_hours_per_m_samples", "cost_per_m_samples"} <= set(cells)
    summary = pd.read_csv(disk_sweep["exp"] / "summary.csv")
    assert list(summary.columns) == COLUMNS
    assert summary.loc[0, "data_source"] == "disk"
    assert summary.loc[0, "data_wait_s"] == pytest.approx(row["data_wait_s"])


@pytest.mark.slow  # a real 2-rank torchrun cell
def test_the_real_cell_result_describes_the_pipeline(disk_sweep: dict[str, Any]) -> None:
    from torchscale.contracts.schema.cell_result import CellResult

    [path] = (disk_sweep["exp"] / "cells").glob("*.json")
    cell = CellResult.model_validate_json(path.read_text())
    assert cell.status == Status.OK
    data = cell.data
    assert data is not None and data.source == "disk"
    assert data.wait_s is not None and data.wait_s >= 0
    assert len(data.wait_s_per_rank) == 2
    assert data.wait_s == max(w for w in data.wait_s_per_rank if w is not None)
    assert (data.num_workers, data.pin_memory, data.prefetch_factor) == (1, False, 2)
    assert data.dataset_bytes == 2 * MB and data.samples == 2 * (MB // 3074)
    phases = [r.phases.data for r in cell.ranks if r.phases and r.phases.data is not None]
    assert data.wait_s == pytest.approx(max(phases))
    assert statistics.fmean(phases) >= 0
