"""What nccl_infer reads from a pasted nccl-tests output: the op from a file name or a command
line, the ranks from a command line or from busbw/algbw."""

from __future__ import annotations

import pytest

from torchscale.offline.comm.nccl_infer import (
    file_name_op,
    parse_command,
    ranks_from_bandwidth,
)


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("all_reduce_perf.txt", "all_reduce"),
        ("allreduce-8gpu.log", "all_reduce"),
        ("AllGather_H100.txt", "all_gather"),
        ("reduce_scatter.log", "reduce_scatter"),
        ("reducescatter.txt", "reduce_scatter"),
        ("alltoall_perf.out", "all_to_all"),
        ("a2a-16.txt", "all_to_all"),
        ("bcast.log", "broadcast"),
        ("sendrecv_perf.txt", "send_recv"),
        ("reduce_perf.txt", "reduce"),
        ("/some/dir/all-gather.txt", "all_gather"),
    ],
)
def test_file_names_that_spell_one_op(name: str, op: str) -> None:
    assert file_name_op(name) == op


@pytest.mark.parametrize(
    "name", ["results.txt", "allreduce_vs_allgather.txt", "gather_perf.txt", "reduced.log"]
)
def test_file_names_that_spell_no_op_or_several(name: str) -> None:
    assert file_name_op(name) is None


@pytest.mark.parametrize(
    ("line", "program", "ranks"),
    [
        ("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8", "all_reduce_perf", 8),
        ("user@host:~/nccl-tests$ ./build/all_reduce_perf -b 8 -g 1", "all_reduce_perf", 1),
        ("mpirun -np 16 -H a:8,b:8 ./build/all_gather_perf -b 8 -g 1", "all_gather_perf", 16),
        ("mpirun -np 2 ./build/all_reduce_perf -b 10G -e 10G -t 1 -g 8", "all_reduce_perf", 16),
        ("srun -N 2 --ntasks=16 all_reduce_perf_mpi -b 1M -t 1 -g1", "all_reduce_perf_mpi", 16),
        ("Running: LD_PRELOAD=x.so ./build/broadcast_perf -b 8 -g 12", "broadcast_perf", 12),
        ("/opt/nccl_tests/build/sendrecv_perf", "sendrecv_perf", 1),
    ],
)
def test_command_lines(line: str, program: str, ranks: int) -> None:
    command = parse_command(line)
    assert command is not None
    assert (command.program, command.ranks, command.kind) == (program, ranks, "command line")


def test_a_launcher_without_a_process_count_gives_no_ranks() -> None:
    command = parse_command("mpirun --hostfile hosts ./build/alltoall_perf -b 8 -g 8")
    assert command is not None and command.program == "alltoall_perf"
    assert command.ranks is None and "without a process count" in command.how


def test_a_label_names_the_program_but_not_the_ranks() -> None:
    command = parse_command("===begin reduce_perf test===")
    assert command is not None
    assert (command.program, command.ranks, command.kind) == ("reduce_perf", None, "label")


@pytest.mark.parametrize(
    "line",
    [
        "The all_reduce_perf test errors when using dual 5090 GPUs with the new driver.",
        "Linking  /home/u/nccl-tests/build/all_reduce.o > /home/u/nccl-tests/build/all_reduce_perf",
        "Compiling  all_gather_perf",
        "# Collective test concluded: all_gather_perf",
        "./build/all_reduce_perf -b 8 && ./build/all_gather_perf -b 8",
        "nThread 1 nGpus 8 minBytes 8 maxBytes 134217728",
    ],
)
def test_lines_that_are_not_commands(line: str) -> None:
    assert parse_command(line) is None


def _figures(*pairs: tuple[float, float]) -> list[tuple[float, float, float, float]]:
    """(algbw, busbw) pairs as printed with two decimals."""
    return [(algbw, 0.005, busbw, 0.005) for algbw, busbw in pairs]


def test_an_all_reduce_ratio_fixes_the_ranks() -> None:
    estimate = ranks_from_bandwidth("all_reduce", _figures((118.87, 222.88), (116.78, 218.96)))
    assert estimate is not None and estimate.exact and estimate.lo == 16
    assert estimate.ratio == pytest.approx(1.875, abs=1e-3)


def test_an_all_gather_ratio_fixes_the_ranks() -> None:
    estimate = ranks_from_bandwidth("all_gather", _figures((347.44, 325.72), (0.04, 0.03)))
    assert estimate is not None and (estimate.lo, estimate.hi) == (16, 16)
    assert estimate.informative == 2


def test_rows_too_small_to_tell_give_nothing() -> None:
    assert ranks_from_bandwidth("all_reduce", _figures((0.0, 0.0), (0.0, 0.01))) is None


def test_a_coarse_ratio_gives_a_range() -> None:
    estimate = ranks_from_bandwidth("all_reduce", _figures((40.79, 81.53), (40.81, 81.57)))
    assert estimate is not None and not estimate.exact
    assert estimate.lo < 1500 < estimate.hi


def test_one_outlier_does_not_outvote_the_other_rows() -> None:
    rows = _figures((100.55, 188.53), (97.67, 183.13), (99.64, 186.83), (50.00, 75.00))
    estimate = ranks_from_bandwidth("all_reduce", rows)
    assert estimate is not None and estimate.exact and estimate.lo == 16
    assert (estimate.agree, estimate.informative) == (3, 4)


def test_disagreeing_rows_are_a_range_not_a_choice() -> None:
    estimate = ranks_from_bandwidth("all_reduce", _figures((100.0, 100.0), (100.0, 150.0)))
    assert estimate is not None and (estimate.lo, estimate.hi) == (2, 4)


def test_one_rank_has_no_bus_bandwidth() -> None:
    estimate = ranks_from_bandwidth("all_reduce", _figures((764.34, 0.0), (863.04, 0.0)))
    assert estimate is not None and (estimate.lo, estimate.hi) == (1, 1)


def test_factor_one_ops_cannot_tell_the_ranks() -> None:
    with pytest.raises(ValueError, match="cannot tell n"):
        ranks_from_bandwidth("broadcast", _figures((10.0, 10.0)))
