"""A Slurm time limit must outlast the warning before it (launcher.slurm.time_limit against
signal_grace_s): Slurm may send the warning up to 60 s early, so a limit shorter than
signal_grace_s + 60 s could end the job before the driver has its handler, and its cell
would be recorded by nobody. One clear line, at config time."""

from __future__ import annotations

import pytest

from torchscale.contracts.errors import ConfigError
from torchscale.orchestration.config import parse_config
from torchscale.orchestration.config.schema import SlurmConfig

MINIMAL = """\
experiment_name: x
models: [resnet50]
batch_sizes: [64]
gpu_counts: [1]
launcher:
  kind: slurm
"""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2", 120),
        ("1:30", 90),
        ("1:00:00", 3600),
        ("1-2", 93600),
        ("1-2:03", 93780),
        ("1-2:03:04", 93784),
        ("0", 0),
    ],
)
def test_slurm_time_formats_in_seconds(text: str, seconds: int) -> None:
    assert SlurmConfig.time_limit_s(text) == seconds


def test_a_time_limit_inside_the_warning_window_is_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + "  slurm: {time_limit: '2'}\n", "bad.yaml")
    [problem] = info.value.problems
    assert problem.path == "launcher.slurm"
    assert problem.message == (
        "time_limit '2' (120 s) is shorter than signal_grace_s + 60 s (180 s): raise "
        "time_limit or lower signal_grace_s"
    )


@pytest.mark.parametrize(
    "slurm",
    [
        # tests/orchestration/test_slurm.py's time-limit job
        "{time_limit: '2', signal_grace_s: 60}",
        "{time_limit: '3'}",
        "{time_limit: '0'}",  # no limit
        "{signal_grace_s: 3600}",  # the partition's limit: not known here
    ],
)
def test_limits_that_outlast_the_warning_are_fine(slurm: str) -> None:
    parse_config(MINIMAL + f"  slurm: {slurm}\n", "good.yaml")


@pytest.mark.parametrize("text", ["120", "600:00", "100:00:00", "2-00:00:00"])
def test_slurm_accepts_minutes_and_hours_of_more_than_two_digits(text: str) -> None:
    """`--time=120` is two hours to Slurm; the pattern once allowed two digits only."""
    SlurmConfig(time_limit=text)


@pytest.mark.parametrize("text", ["1:2", "1-", "-5", "1-2-3", "1:00:00:00", "2h"])
def test_slurm_time_typos_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        SlurmConfig(time_limit=text)


@pytest.mark.parametrize("text", ["١٠:٠٠", "1-٢", "1:2", "1h"])
def test_a_time_limit_slurm_cannot_read_is_refused_at_config_time(text: str) -> None:
    """Slurm reads ASCII digits only: another script's digits (which int() would take) are
    refused here, not by sbatch after the sweep has begun."""
    with pytest.raises(ConfigError) as info:
        parse_config(MINIMAL + f"  slurm: {{time_limit: '{text}'}}\n", "bad.yaml")
    assert [p.path for p in info.value.problems] == ["launcher.slurm.time_limit"]
