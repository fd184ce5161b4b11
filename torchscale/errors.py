"""The one exception tree of torchscale.

Library code raises these; only the CLI layer turns them into messages and exit codes, so the
same failure reads the same whichever command hit it.

Layer 1 (contracts) of docs/architecture.md: imports only other contracts.
"""

from __future__ import annotations

from dataclasses import dataclass

# `torchscale report --fail-on-regression` exits 3 only on a regression verdict (a CI gate
# tells it apart from a crash, 1). Cells the rule could not judge (too few repeats) are no
# evidence either way: the gate passes with a warning saying so (docs/regressions.md).
EXIT_REGRESSION = 3


class TorchScaleError(Exception):
    """Base of every error torchscale raises on purpose. `exit_code` is what the CLI returns."""

    exit_code: int = 1

    def lines(self) -> list[str]:
        """One line per problem, ready to print."""
        return [str(self)]


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
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        parts = [p for p in (where, self.path) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class ConfigError(TorchScaleError):
    """A config file or override is invalid. Carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems))

    def lines(self) -> list[str]:
        return [p.render() for p in self.problems]


class UsageError(TorchScaleError):
    """The command line itself is wrong (bad option value, missing file)."""

    exit_code = 2


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


def describe_os_error(exc: OSError) -> str:
    """'No space left on device (ENOSPC)' style text for an OSError, without the traceback."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text
