"""`torchscale config validate|show|schema`: check, resolve and describe config files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from torchscale.interfaces.cli.common import handle_errors
from torchscale.interfaces.cli.shared_options import DottedOverrides, SetOverrides, VerbosityFlag
from torchscale.interfaces.console.streams import Verbosity, stdout

app = typer.Typer(help="Check, resolve and describe benchmark config files.", no_args_is_help=True)

ConfigFile = Annotated[
    Path, typer.Argument(help="YAML config file.", show_default=False, metavar="FILE")
]


@app.command("validate", cls=DottedOverrides)  # also --training.precision=bf16
@handle_errors
def validate_config(
    file: ConfigFile, overrides: SetOverrides = None, verbose: VerbosityFlag = None
) -> None:
    """Check a config file (and overrides); exit 0 when valid, 2 with every problem otherwise."""
    Verbosity.override(verbose)
    from torchscale.orchestration.config import load_config

    config = load_config(file, overrides or [])
    from torchscale.contracts.parallel_shapes import parallel_shapes
    from torchscale.orchestration.plan.nodes import cell_shapes

    per_model_batch = sum(
        len(parallel_shapes(strategy, config.training.parallel, shape.world_size))
        for strategy in config.training.strategy
        for shape in cell_shapes(config)
    )
    auto = isinstance(config.batch_sizes, str)  # batch_sizes: auto, one batch per model
    batches = 1 if auto else len(config.batch_sizes)
    cells = len(config.models) * batches * len(config.training.precision) * per_model_batch
    job_cells = sum(  # a job crosses gpu_counts and the axes its command names
        len(cell_shapes(config))
        * (batches if "batch" in job.named else 1)
        * (len(config.training.precision) if "precision" in job.named else 1)
        for job in config.jobs
    )
    if not Verbosity.quiet():
        layouts = ""
        if any(s in ("tp", "pp", "hybrid") for s in config.training.strategy):
            layouts = " (tp/pp/hybrid: one cell per parallel layout)"
        batch_text = (
            "1 batch size (auto, sized when planned)" if auto else f"{batches} batch size(s)"
        )
        factors = (
            f"{len(config.models)} model(s)",
            batch_text,
            f"{len(config.gpu_counts)} GPU count(s)",
            f"{len(config.training.precision)} precision(s)",
            f"{len(config.training.strategy)} strategy(ies)",
        )
        stdout.print(
            f"[green]OK[/] {file}: experiment '{config.experiment_name}', {cells} cell(s) = "
            + " x ".join(factors)
            + layouts
            + (
                f", and {job_cells} cell(s) of {len(config.jobs)} job(s) (each over gpu_counts "
                "and the axes its command names)"
                if config.jobs
                else ""
            ),
            markup=True,
        )
        _, on_cuda = config.for_device("cuda")
        if on_cuda is not None:  # the cell count above is the CPU sweep's
            stdout.print(f"on CUDA GPUs, {on_cuda}; on CPU, the keys above apply", markup=False)


@app.command("init")
@handle_errors
def init_config(
    hardware: Annotated[
        str,
        typer.Option(
            "--hardware",
            help="auto (this node), cpu, or a named node: v100-8x, a10g-1x, l4-1x, "
            "a100-40gb-8x, a100-8x, h100-1x, h100-8x, h200-8x.",
        ),
    ] = "auto",
    output: Annotated[
        Path | None,
        # a file: --output (-o is --output-dir, a directory, in every command but `report`)
        typer.Option("--output", help="Write here (default: print).", show_default=False),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Write a commented starter config sized for this node or a named one."""
    from torchscale.contracts.atomic import write_text_atomic
    from torchscale.contracts.errors import ResultsError, UsageError, describe_os_error
    from torchscale.orchestration.config import parse_config
    from torchscale.orchestration.config.hardware import hardware as resolve_hardware
    from torchscale.orchestration.config.starter import plan_starter, starter_yaml

    node = resolve_hardware(hardware)
    text = starter_yaml(plan_starter(node))
    parse_config(text, "the starter config")  # what it writes must validate
    if output is None:
        typer.echo(text, nl=False)
        return
    if output.exists() and not force:
        raise UsageError(
            f"{output} exists: choose another --output FILE, or --force to overwrite it"
        )
    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise ResultsError(f"cannot write {output}: {describe_os_error(exc)}") from None
    if not Verbosity.quiet():
        stdout.print(
            f"wrote {output} ({node.source}); check it: torchscale config validate {output}"
        )


@app.command("show", cls=DottedOverrides)
@handle_errors
def show_config(
    file: ConfigFile,
    overrides: SetOverrides = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False,
) -> None:
    """Print the resolved config with every default filled in."""
    from torchscale.orchestration.config import load_config
    from torchscale.orchestration.config.yaml_source import dump_yaml

    data = load_config(file, overrides or []).model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(dump_yaml(data).rstrip())


@app.command("schema")
@handle_errors
def config_schema() -> None:
    """Print the config's JSON Schema (point your editor's YAML plug-in at it)."""
    from torchscale.orchestration.config.schema import BenchConfig

    typer.echo(json.dumps(BenchConfig.model_json_schema(), indent=2))
