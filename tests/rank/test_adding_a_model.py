"""Adding a built-in model is one file plus one registry line (docs/architecture.md,
"Where a new thing goes"): tests/added_model.py holds a spec and its builder, and a fresh
interpreter adds the one line to torchscale/contracts/model_specs/registry.py's mapping before
anything reads it. Every consumer then knows the model without another file changing: the catalog,
config validation (still without torch), `torchscale list`, the data tasks, the training defaults
and the rank-side builder, whose model is the one its spec describes."""

from __future__ import annotations

import pytest

from tests.added_model import TINY_DECODER
from tests.fresh_interpreter import run_probe

_PROBE = """
import json, sys
import torchscale.contracts.model_specs.registry as registry
from tests.added_model import TINY_DECODER
registry.BUILTIN[TINY_DECODER.name] = TINY_DECODER  # the registry line

from typer.testing import CliRunner
from torchscale.contracts.catalog import BUILTIN_MODELS
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.config import parse_config
from torchscale.contracts.model_tasks import task_of, unsupported
from torchscale.contracts.errors import ConfigError
from torchscale.contracts.training_defaults import (
    BLOCKWISE_LOSS_MODELS,
    CONV_NETS,
    builtin_conv_net,
)

found = {}
found["catalog"] = sorted(BUILTIN_MODELS.get("tiny-decoder", ()))
head = "experiment_name: x\\ngpu_counts: [1]\\nbatch_sizes: [8]\\n"
config = parse_config(head + "models: [{name: tiny-decoder, options: {layers: 1}}]\\n", "x.yaml")
found["validated"] = [m.name for m in config.models]
try:
    parse_config(head + "models: [{name: tiny-decoder, options: {layer: 1}}]\\n", "x.yaml")
except ConfigError as exc:
    found["refused"] = str(exc)
try:
    parse_config(head + "models: [tiny-decodr]\\n", "x.yaml")
except ConfigError as exc:
    found["misspelt"] = str(exc)
found["task"] = task_of("tiny-decoder")
found["cifar"] = unsupported("cifar100", "tiny-decoder").model_dump()
found["blockwise"] = "tiny-decoder" in BLOCKWISE_LOSS_MODELS
found["conv"] = ["tiny-decoder" in CONV_NETS, builtin_conv_net("tiny-decoder")]
found["torch_before_build"] = "torch" in sys.modules
listed = CliRunner().invoke(app, ["list", "--json"])
found["listed"] = [m for m in json.loads(listed.output)["models"] if m["name"] == "tiny-decoder"]
table = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"}).output
found["in_table"] = any(line.startswith("tiny-decoder ") for line in table.splitlines())

from torchscale.rank.models import build_model, parameter_count
from tests.model_measure import measure

bundle = build_model("tiny-decoder", {"layers": 1})
found["built"] = [type(bundle.model).__name__, len(bundle.model.blocks)]
found["measured_is_stored"] = measure("tiny-decoder") == TINY_DECODER.measured
print(json.dumps(found))
"""


@pytest.mark.slow
def test_one_file_and_one_registry_line_add_a_model() -> None:
    found = run_probe(_PROBE)
    assert found["catalog"] == ["layers", "seq_len"]
    assert found["validated"] == ["tiny-decoder"]
    assert (
        "unknown option(s) for model 'tiny-decoder': 'layer' (did you mean 'layers'?)"
        in (found["refused"])
    )
    assert "unknown model 'tiny-decodr' (did you mean 'tiny-decoder'?)" in found["misspelt"]
    assert found["torch_before_build"] is False  # validating, listing: no torch
    assert found["task"] == "next-token"
    assert found["cifar"]["code"] == "plan.data_images_only"
    assert "tiny-decoder" not in found["cifar"]["figures"]["models"]
    assert found["blockwise"] is True and found["conv"] == [False, False]
    [row] = found["listed"]
    assert row["parameters"] == TINY_DECODER.measured.parameters == 8_672
    assert row["options"] == {"seq_len": 16, "layers": 2}
    assert row["strategies"] == list(TINY_DECODER.strategies)
    assert found["in_table"]
    assert found["built"] == ["TinyDecoder", 1]
    assert found["measured_is_stored"] is True
