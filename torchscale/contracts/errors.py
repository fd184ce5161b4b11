"""The one exception tree of torchscale.

Library code raises these; only the CLI layer turns them into messages and exit codes, so the
same failure reads the same whichever command hit it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Exit codes, the same for every command (docs/cli.md "Exit codes"). Each error class carries its
# own: EXIT_USAGE is set once, on UsageError; every input or usage error derives from it.
EXIT_FAILED = 1  # a run that started and failed: a cell, a check, an element was wrong
EXIT_USAGE = 2  # the command line or an input it names cannot be used; nothing was run
# `torchscale report --fail-on-regression` exits 3 on a regression verdict (a CI gate tells it
# apart from a crash, 1), and 4 when nothing could be judged: no matched cell got a verdict
# (too few repeats, busy machine) or none matched. That is no evidence either way, so neither
# a pass (0) nor a regression (3). Some cells judged, none regressed: 0, with a warning
# naming those it could not judge (docs/regressions.md).
EXIT_REGRESSION = 3
EXIT_NOT_JUDGED = 4


class TorchScaleError(Exception):
    """Base of every error torchscale raises on purpose. `exit_code` is what the CLI returns."""

    exit_code: int = EXIT_FAILED

    def lines(self) -> list[str]:
        """One line per problem, ready to print."""
        return [str(self)]


class UsageError(TorchScaleError):
    """The command line is wrong, or an input it names cannot be used: a bad option value, a
    file or directory that is missing, unreadable or not what was asked for, a tool asked for
    that is not installed. The one class mapped to exit 2; every input error derives from it."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class ConfigProblem:
    """One problem found in a config: where it is and what is wrong."""

    path: str  # dotted path such as "training.precision" or "batch_sizes[1]"; "" for the file
    message: str
    source: str = ""  # file name, or "--set" for a command-line override
    line: int | None = None  # 1-based line in `source` where known
    column: int | None = None  # 1-based column where known

    def render(self) -> str:
        where = self.source
        if where and self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        return ": ".join([*(part for part in (where, self.path) if part), self.message])


class ConfigError(UsageError):
    """A config file or override is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems))

    def lines(self) -> list[str]:
        return [p.render() for p in self.problems]


class LaunchError(TorchScaleError):
    """A subprocess (torchrun, nsys) could not be started or did not finish as expected."""


class ModelError(TorchScaleError):
    """A model cannot be built: unknown name, bad option, or a plug-in that breaks its contract."""


class ResultsError(TorchScaleError):
    """A results directory cannot be written (disk full, quota, permissions) or read."""


class TraceError(TorchScaleError):
    """A trace cannot be read or analysed (missing, not a trace, truncated, inconsistent ranks).

    Raised for a whole input that cannot be used; a problem with one part of an otherwise usable
    trace is a note in the analysis instead, so a partial analysis still comes out."""


class DataError(TorchScaleError):
    """The input data cannot be prepared or read: shards that cannot be written (disk full),
    dataset files missing or malformed, a model the data source cannot feed."""


class SlurmError(TorchScaleError):
    """A Slurm command failed or said something we cannot read (sbatch refused a job,
    squeue cannot reach slurmctld)."""


class OutputDirError(UsageError):
    """The results directory asked for cannot be created or written: nothing was run."""


# Input errors that library callers already catch by their domain class: each is both
# (`except ResultsError` still catches a missing results directory) and exits 2 as UsageError.


class ResultsInputError(ResultsError, UsageError):
    """A results directory named as input (`report -s`, `--baseline`) is missing, not a
    directory, empty, or holds no usable results."""


class TraceInputError(TraceError, UsageError):
    """Traces named as input (`profile analyze DIR`) are missing or cannot be read as traces."""


class ToolNotFoundError(LaunchError, UsageError):
    """A tool the command line asked for (`--tool nsys`, TORCHSCALE_NSYS) is not installed."""


def describe_os_error(exc: OSError) -> str:
    """'No space left on device (ENOSPC)' style text for an OSError, without the traceback."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text
