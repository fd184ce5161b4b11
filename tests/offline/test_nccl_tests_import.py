"""Importing NVIDIA nccl-tests output (text and -J JSON) as a CommResult.

The fixtures under fixtures/nccl_tests were written from nccl-tests' printf formats (src/util.cu,
src/common.cu) with made-up timings; small variants are built here with `_output`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from torchscale.contracts.errors import TorchScaleError, UsageError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.wording import say
from torchscale.offline.analysis.nccl_bandwidth import busbw_factor
from torchscale.offline.comm.nccl_tests import (
    TYPES,
    NcclTestsFormatError,
    parse_json,
    parse_text,
    read_nccl_tests,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nccl_tests"
H100 = "NVIDIA H100 80GB HBM3"


def _read(name: str, op: str | None = None) -> CommResult:
    return read_nccl_tests(FIXTURES / name, op=op)


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def _parse(text: str, op: str | None = None) -> CommResult:
    return parse_text(text, op=op, source_name="out.txt", run_id="r")


def _said(result: CommResult) -> list[str]:
    """The result's warnings in words, as a report shows them."""
    return [say(w) for w in result.warnings]


def _error(call: Callable[..., object], *args: object, **kwargs: object) -> TorchScaleError:
    """The error a call raises, checked to be one printable line with exit code 2."""
    with pytest.raises(TorchScaleError) as caught:
        call(*args, **kwargs)
    error = caught.value
    assert error.exit_code == 2
    assert error.lines() == [str(error)]
    assert "\n" not in str(error) and "Traceback" not in str(error)
    return error


def _row(size: int, count: int, time_us: float, factor: float, extra: str) -> str:
    """One table line whose figures follow nccl-tests' definitions (algbw = S/t)."""
    algbw = size / time_us / 1e3
    half = f"  {time_us:7.2f}  {algbw:6.2f}  {algbw * factor:6.2f}  {0:6g}{extra}"
    return f"{size:12d}  {count:12d}  {{type}}  {{redop}}  {{root}}{half}{half}"


def _output(
    program: str | None = "all_reduce_perf",
    ranks: int = 2,
    *,
    type_name: str = "float",
    itemsize: int = 4,
    redop: str = "sum",
    root: int = -1,
    factor: float | None = None,
    per_rank: bool = False,
    columns: str = "time algbw busbw #wrong",
    extra: str = "",
    timestamp: str = "",
    rank_lines: list[str] | None = None,
) -> str:
    """A small nccl-tests text output: one process with `ranks` GPUs, four sizes. `per_rank`:
    the count column is per rank (all_gather, reduce_scatter, alltoall); `extra` is appended
    to each placement's figures, `timestamp` to each row."""
    factor = busbw_factor("all_reduce", ranks) if factor is None else factor
    lines = ["# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703"]
    if program:
        lines.append(f"# Collective test starting: {program}")
    lines += [
        f"# nThread 1 nGpus {ranks} minBytes 1024 maxBytes 1048576 step: 8(factor) warmup iters: "
        "5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    lines += rank_lines or [
        f"#  Rank {r:2d} Group  0 Pid   4242 on     host-a device {r:2d} [0000:{r:02x}:00] {H100}"
        for r in range(ranks)
    ]
    tail = " timestamp" if timestamp else ""
    lines += ["#", f"#  size  count  type  redop  root  {columns}  {columns}{tail}", "#  (B)"]
    busbws = []
    for size, time_us in ((1024, 10.0), (8192, 11.5), (65536, 15.25), (1048576, 60.0)):
        count = size // itemsize // (ranks if per_rank else 1)
        row = _row(size, count, time_us, factor, extra)
        fields = {"type": f"{type_name:>8}", "redop": f"{redop:>6}", "root": f"{root:6d}"}
        lines.append(row.format(**fields) + (f"  {timestamp}" if timestamp else ""))
        busbws += [round(size / time_us / 1e3 * factor, 2)] * 2
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):g} ",
        "#",
    ]
    return "\n".join(lines) + "\n"


# --- fixtures: every file parses to the expected rows -------------------------------------------


def test_all_reduce_text_rows_and_metadata() -> None:
    result = _read("all_reduce_2gpu.txt")
    assert result.source == "nccl-tests"
    assert result.id == "nccl-tests-all_reduce_2gpu"
    assert result.imported_from == str(FIXTURES / "all_reduce_2gpu.txt")
    assert (result.world_size, result.nodes, result.device, result.backend) == (
        2,
        1,
        "cuda",
        "nccl",
    )
    assert result.device_name == H100
    assert (result.dtype, result.warmup_iters, result.iters) == ("float32", 5, 20)
    assert result.check is True and result.across_ranks == "avg"
    assert (result.status, result.error) == ("ok", None)
    assert result.warnings == []
    assert result.environment == {"nccl_tests_version": "2.17.6", "nccl_version": 22703}
    assert len(result.rows) == 18  # nine sizes, two placements each
    first, second = result.rows[0], result.rows[1]
    assert (first.op, first.size_bytes, first.count, first.dtype) == ("all_reduce", 8, 2, "float32")
    assert (first.redop, first.root, first.placement) == ("sum", None, "out-of-place")
    assert (first.time_us, first.algbw_gbps, first.busbw_gbps, first.wrong) == (9.52, 0.0, 0.0, 0)
    assert (second.placement, second.time_us) == ("in-place", 9.58)
    last = result.rows[-1]
    assert (last.size_bytes, last.count, last.time_us, last.busbw_gbps) == (
        134217728,
        33554432,
        821.58,
        163.37,
    )
    assert all(r.ranks == [] and r.iter_p50_us is None and r.status == "ok" for r in result.rows)
    assert result.avg_busbw_gbps == pytest.approx(49.144, abs=0.001)  # the footer's figure
    assert result.wrong_total == 0
    [summary] = result.summaries
    assert (summary.op, summary.rows, summary.busbw_factor) == ("all_reduce", 18, 1.0)


def test_all_gather_on_two_hosts_needs_the_op_and_scales_size_by_ranks() -> None:
    result = _read("all_gather_8rank_2host.txt", op="all_gather")
    assert (result.world_size, result.nodes, result.dtype) == (8, 2, "float16")
    assert result.warnings == []
    assert all(r.size_bytes == r.count * 2 * 8 for r in result.rows)
    assert all(r.redop is None and r.root is None for r in result.rows)
    row = result.rows[12]  # 4 MiB out-of-place, old "%7.1f" time
    assert (row.size_bytes, row.count, row.time_us, row.algbw_gbps) == (
        4194304,
        262144,
        125.1,
        33.52,
    )
    assert result.summaries[0].busbw_factor == pytest.approx(7 / 8)


def test_validation_off_reads_na_as_unchecked() -> None:
    result = _read("broadcast_nocheck.txt")
    assert result.check is False and result.wrong_total is None
    assert all(r.wrong is None for r in result.rows)
    assert {r.op for r in result.rows} == {"broadcast"}
    assert all(r.root == 0 and r.redop is None for r in result.rows)
    assert (result.dtype, result.world_size) == ("bfloat16", 4)
    assert result.summaries[0].wrong is None
    # 256 MiB: more than 7 characters at two decimals, so nccl-tests printed one
    assert result.rows[-1].time_us == 12825.6
    assert result.warnings == []


def test_json_matches_the_text_of_the_same_run() -> None:
    text, doc = _read("all_reduce_2gpu.txt"), _read("all_reduce_2gpu.json")
    assert len(doc.rows) == len(text.rows)
    for j, t in zip(doc.rows, text.rows, strict=True):
        same = ("op", "size_bytes", "count", "dtype", "redop", "root", "placement", "wrong")
        assert all(getattr(j, key) == getattr(t, key) for key in same)
        # the text rounds to the printed digits, the JSON keeps six decimals
        assert j.time_us == pytest.approx(t.time_us, abs=0.005)
        assert j.algbw_gbps == pytest.approx(t.algbw_gbps, abs=0.005)
        assert j.busbw_gbps == pytest.approx(t.busbw_gbps, abs=0.005)
    same_result = ("world_size", "nodes", "device_name", "dtype", "warmup_iters", "iters", "check")
    assert all(getattr(doc, key) == getattr(text, key) for key in same_result)
    assert doc.warnings == []


def test_json_context_from_args_and_times() -> None:
    result = _read("all_reduce_2gpu.json")
    assert result.started_at == "2025-03-04T10:11:12"
    assert result.wall_s == 7.0
    assert result.launch["args"][0] == "./build/all_reduce_perf"
    assert result.launch["program"] == "all_reduce_perf"
    assert result.environment == {"nccl_version": 22703}
    assert "env" not in result.launch  # nccl-tests records the environment: never copied


def test_two_runs_in_one_log_become_two_ops() -> None:
    result = _read("two_runs.txt")
    assert [s.op for s in result.summaries] == ["all_reduce", "send_recv"]
    assert result.warnings == []
    send_recv = [r for r in result.rows if r.op == "send_recv"]
    assert len(send_recv) == 12
    assert all(r.redop is None for r in send_recv)  # sendrecv_perf prints "sum" regardless
    assert len(result.launch["runs"]) == 2


def test_run_that_failed_mid_table_keeps_the_rows_before_it() -> None:
    result = _read("failed_midway.txt")
    assert len(result.rows) == 12
    assert result.rows[-1].size_bytes == 1048576
    assert Finding(code="comm.import.stopped_early", figures={"rows": 6}) in result.warnings
    assert any("NCCL WARN" in w.figures.get("text", "") for w in result.warnings)
    assert result.status == "failed"  # as torchscale records its own runs that stopped early
    assert result.error is not None and result.error.startswith("line 21: node-c: Test NCCL")


# --- the op, the dtype, the program names -------------------------------------------------------


def test_op_missing_is_read_from_the_file_name() -> None:
    result = _read("all_gather_8rank_2host.txt")
    assert {r.op for r in result.rows} == {"all_gather"}
    assert result.launch["inferred"] == {"op": "from the file name all_gather_8rank_2host.txt"}
    assert _said(result) == [
        "inferred the op, all_gather: from the file name all_gather_8rank_2host.txt"
    ]


def test_op_missing_and_ambiguous_asks_for_it() -> None:
    """all_gather and alltoall print the same columns, sizes and busbw factor."""
    error = _error(_parse, _text("all_gather_8rank_2host.txt"))
    assert isinstance(error, NcclTestsFormatError)
    assert str(error) == (
        "out.txt:1: the output does not name its test and all_gather on 8 ranks and all_to_all "
        "on 8 ranks fit its table alike (no redop, root -1, size = count x type size x 8): "
        "pass the op"
    )


def test_the_files_own_test_name_wins_over_the_op_argument() -> None:
    result = _read("all_reduce_2gpu.txt", op="all_gather")
    assert {r.op for r in result.rows} == {"all_reduce"}
    assert _said(result) == [
        "the file says all_reduce_perf: imported as all_reduce, not all_gather"
    ]


@pytest.mark.parametrize(
    ("program", "op"),
    [
        ("all_reduce_perf", "all_reduce"),
        ("all_gather_perf", "all_gather"),
        ("reduce_scatter_perf", "reduce_scatter"),
        ("broadcast_perf", "broadcast"),
        ("reduce_perf", "reduce"),
        ("alltoall_perf", "all_to_all"),
        ("sendrecv_perf", "send_recv"),
        ("all_reduce_perf_mpi", "all_reduce"),
    ],
)
def test_program_names_map_to_torchscale_ops(program: str, op: str) -> None:
    ranks = 2
    factor = busbw_factor(op, ranks)
    spread = op in ("all_gather", "reduce_scatter", "all_to_all")
    redop = "sum" if op in ("all_reduce", "reduce_scatter", "reduce", "send_recv") else "none"
    root = 0 if op in ("broadcast", "reduce") else -1
    text = _output(program, ranks, redop=redop, root=root, factor=factor, per_rank=spread)
    result = _parse(text)
    assert {r.op for r in result.rows} == {op}
    assert result.warnings == []


@pytest.mark.parametrize("program", ["gather_perf", "scatter_perf", "hypercube_perf"])
def test_tests_without_a_torchscale_op_are_refused(program: str) -> None:
    error = _error(_parse, _output(program))
    assert f"{program} has no torchscale op" in str(error)


def test_an_unknown_op_argument_is_refused() -> None:
    error = _error(_parse, _output(None), op="allreduce")
    assert "allreduce has no torchscale op" in str(error)


@pytest.mark.parametrize(
    ("nccl_type", "dtype", "itemsize"),
    [
        ("float", "float32", 4),
        ("half", "float16", 2),
        ("bfloat16", "bfloat16", 2),
        ("double", "float64", 8),
        ("int32", "int32", 4),
        ("int8", "int8", 1),
        ("uint8", "uint8", 1),
        ("int64", "int64", 8),
        ("uint64", "uint64", 8),
        ("f8e4m3", "float8_e4m3fn", 1),
        ("f8e5m2", "float8_e5m2", 1),
    ],
)
def test_types_map_to_torch_dtypes(nccl_type: str, dtype: str, itemsize: int) -> None:
    assert TYPES[nccl_type] == (dtype, itemsize)
    result = _parse(_output(type_name=nccl_type, itemsize=itemsize))
    assert {r.dtype for r in result.rows} == {dtype}
    assert all(r.size_bytes == r.count * itemsize for r in result.rows)


def test_an_unknown_type_names_its_line() -> None:
    error = _error(_parse, _output(type_name="float128"))
    assert str(error).startswith("out.txt:11: ") and "'float128'" in str(error)


# --- checks against nccl-tests' own formulas ----------------------------------------------------


def test_a_planted_bad_row_is_named_in_a_warning() -> None:
    text = _text("all_reduce_2gpu.txt")
    good = "    16777216       4194304     float     sum      -1   109.78  152.83  152.83"
    assert good in text
    planted = text.replace(good, good[: -len("152.83")] + "120.00")
    result = _parse(planted)
    [warning] = [w for w in _said(result) if w.startswith("line 20")]
    assert "out-of-place: busbw 120 GB/s" in warning and "152.8" in warning
    assert len(result.rows) == 18  # kept as printed
    assert result.rows[14].busbw_gbps == 120.0
    assert any(
        w.code == "comm.import.footer_busbw" for w in result.warnings
    )  # the footer no longer agrees


def test_a_row_whose_algbw_is_not_size_over_time_is_named() -> None:
    text = _text("all_reduce_2gpu.txt")
    planted = text.replace("   822.28  163.23", "   922.28  163.23")
    [warning] = [w for w in _said(_parse(planted)) if w.startswith("line 21")]
    assert "algbw 163.23 GB/s, but 134217728 B in 922.28 µs is 145.5 GB/s" in warning


def test_most_rows_disagreeing_means_the_op_is_wrong() -> None:
    text = _text("all_reduce_2gpu.txt").replace("# Collective test starting: all_reduce_perf\n", "")
    error = _error(_parse, text, op="reduce_scatter")
    assert "rows disagree with nccl-tests' formulas for reduce_scatter on 2 ranks" in str(error)
    assert "is the op or the rank count wrong?" in str(error)


def test_most_rows_disagreeing_means_the_rank_count_is_wrong() -> None:
    text = _text("all_gather_8rank_2host.txt")
    missing = text.replace(
        "#  Rank  7 Group  0 Pid   7107 on     node-b device  3 [0x61] NVIDIA H100 80GB HBM3\n", ""
    )
    error = _error(_parse, missing, op="all_gather")
    assert "for all_gather on 7 ranks" in str(error)


def test_the_redop_and_root_columns_catch_a_wrong_op() -> None:
    error = _error(_read, "all_gather_8rank_2host.txt", op="broadcast")
    assert "root -1, but broadcast has a root rank: is the op right?" in str(error)
    error = _error(_read, "all_gather_8rank_2host.txt", op="all_reduce")
    assert "no redop, which all_reduce needs" in str(error)


def test_a_footer_that_disagrees_with_the_rows_is_a_warning() -> None:
    text = _text("all_reduce_2gpu.txt").replace(
        "Avg bus bandwidth    : 49.144", "Avg bus bandwidth : 59.1"
    )
    [warning] = _said(_parse(text))
    assert "Avg bus bandwidth 59.1 GB/s is not the mean busbw of the rows (49.14 GB/s)" in warning


# --- files that are not nccl-tests output -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.txt", "empty.txt: the file is empty"),
        ("not_nccl.txt", "not_nccl.txt: not nccl-tests output"),
        ("results.csv", "results.csv: not nccl-tests output"),
        ("torchscale_result.json", "a torchscale comm result, not nccl-tests output"),
        ("truncated.json", "truncated.json:1:1712: not valid JSON"),
        (
            "bad_columns.txt",
            "bad_columns.txt:15: a table row with 12 columns where the header has 13",
        ),
    ],
)
def test_files_that_are_not_usable_fail_with_one_line(name: str, message: str) -> None:
    error = _error(_read, name)
    assert isinstance(error, NcclTestsFormatError)
    assert str(error).startswith(str(FIXTURES)) and message in str(error)


def test_an_unreadable_path_is_a_usage_error(tmp_path: Path) -> None:
    error = _error(read_nccl_tests, tmp_path / "missing.txt")
    assert isinstance(error, UsageError)
    assert (
        str(error) == f"{tmp_path / 'missing.txt'}: cannot read: No such file or directory (ENOENT)"
    )
    assert "cannot read" in str(_error(read_nccl_tests, tmp_path))


def test_separate_processes_without_mpi_are_refused() -> None:
    rank0 = f"#  Rank  0 Group  0 Pid   {{pid}} on     host-a device  0 [0000:18:00] {H100}"
    lines = [rank0.format(pid=4242), rank0.format(pid=4243)]
    error = _error(_parse, _output(rank_lines=lines))
    assert "rank 0 is listed 2 times" in str(error) and "MPI=1" in str(error)


def test_a_run_that_died_before_its_table_fails() -> None:
    text = (
        _output().split("#  size")[0]
        + "host-a: Test NCCL failure init.cc:12 'unhandled system error'\n"
    )
    error = _error(_parse, text)
    assert "nccl-tests failed before its first row (line 9: host-a: Test NCCL failure" in str(error)


# --- format variants ----------------------------------------------------------------------------


def test_timestamp_and_per_iteration_columns() -> None:
    text = _output(
        columns="time algbw busbw #wrong i_min i_max i_p99 i_cv%",
        extra="     9.00    12.00    11.50     3.10",
        timestamp="2025-03-04 10:11:12",
    )
    result = _parse(text)
    assert len(result.rows) == 8
    assert result.rows[0].time_us == 10.0
    assert result.rows[0].iter_p99_us is None
    [warning] = _said(result)
    assert "per-iteration columns (i_min, i_max, i_p99, i_cv%) not imported" in warning


def test_a_bitwise_column() -> None:
    result = _parse(_output(columns="time algbw busbw #wrong #bitdiff", extra="         0"))
    assert len(result.rows) == 8 and result.warnings == []


def test_cpu_times_are_not_op_times() -> None:
    text = _output(columns="cputime algbw busbw #wrong")
    text = text.replace("    10.00", "     3.10")  # a launch time: algbw no longer follows from it
    result = _parse(text)
    assert all(r.time_us is None for r in result.rows)
    assert _said(result) == ["times are CPU launch times (-C 1), not op times: time_us left empty"]


def test_an_empty_redop_column_in_older_output() -> None:
    text = _output("broadcast_perf", factor=1.0, redop="", root=0)
    result = _parse(text)
    assert all(r.redop is None and r.root == 0 for r in result.rows)


def test_large_wrong_counts_printed_with_g() -> None:
    text = _output().replace("       0\n", "   1e+06\n", 1)
    result = _parse(text)
    assert result.rows[1].wrong == 1_000_000
    assert result.wrong_total == 1_000_000


def _json(**changes: object) -> str:
    doc = json.loads(_text("all_reduce_2gpu.json"))
    doc.update(changes)
    return json.dumps(doc)


def test_json_devices_list_one_rank_per_process() -> None:
    doc = json.loads(_text("all_reduce_2gpu.json"))
    device = doc["config"]["devices"][0]
    doc["config"]["devices"] = [
        device,
        {**device, "rank": 2, "pid": 40212, "hostname": "gpu-node-02"},
    ]
    doc["config"]["ngpus"] = 1  # two processes with one GPU each: still two ranks
    result = parse_json(json.dumps(doc), op=None, source_name="out.json", run_id="r")
    assert (result.world_size, result.nodes) == (2, 2)


@pytest.mark.parametrize(
    ("flag", "across"), [(["-a", "2"], "min"), (["-a3"], "max"), (["--average=1"], "avg")]
)
def test_json_average_setting(flag: list[str], across: str) -> None:
    args = ["./build/all_reduce_perf", "-g", "2", *flag]
    result = parse_json(_json(args=args), op=None, source_name="out.json", run_id="r")
    assert result.across_ranks == across


def test_json_rank0_times_are_flagged() -> None:
    args = ["./build/all_reduce_perf", "-g", "2", "-a", "0"]
    result = parse_json(_json(args=args), op=None, source_name="out.json", run_id="r")
    [warning] = result.warnings
    assert warning == Finding(code="comm.import.average_setting", figures={"average": 0})
    assert say(warning).startswith("nccl-tests ran with -a 0: its times are rank 0's")


def test_json_of_a_failed_run_keeps_complete_records() -> None:
    doc = json.loads(_text("all_reduce_2gpu.json"))
    for key in ("out_of_bounds", "average_bus_bandwidth", "end_time"):
        del doc[key]
    doc["results"][-1] = {k: doc["results"][-1][k] for k in ("size", "count", "type")}
    doc["errors"] = ["unhandled cuda error"]
    result = parse_json(json.dumps(doc), op=None, source_name="out.json", run_id="r")
    assert len(result.rows) == 16
    assert _said(result) == ["the run stopped early: imported the 8 table lines before it"]
    assert (result.status, result.error) == ("failed", "errors: unhandled cuda error")
    assert result.wall_s is None


def test_json_without_the_test_name_needs_the_op() -> None:
    text = _json(args=[])
    error = _error(parse_json, text, op=None, source_name="out.json", run_id="r")
    assert "pass the op" in str(error)
    result = parse_json(text, op="all_reduce", source_name="out.json", run_id="r")
    assert len(result.rows) == 18


def test_json_that_is_not_nccl_tests() -> None:
    error = _error(parse_json, '{"a": 1}', op=None, source_name="x.json", run_id="r")
    assert (
        str(error)
        == "x.json: not nccl-tests JSON: no 'config' object and 'results' list (as -J writes)"
    )


def test_a_log_without_rank_lines() -> None:
    text = "\n".join(line for line in _output(ranks=4).splitlines() if "Rank" not in line)
    result = _parse(text + "\n")
    assert (result.world_size, result.unavailable) == (
        4,
        {"nodes": Finding(code="comm.nodes.no_hosts")},
    )
    assert _said(result) == ["inferred 4 ranks: busbw/algbw = 1.4994 -> 4 (2(n-1)/n)"]
    table_only = text.split("# Using devices\n")[1] + "\n"
    assert _parse(table_only, op="all_reduce").world_size == 4


def test_a_missing_footer_is_a_warning() -> None:
    result = _read("truncated.txt")
    assert (len(result.rows), result.status) == (8, "ok")
    assert _said(result) == [
        "no footer ('# Avg bus bandwidth') after the 4 table lines: the output may be cut short"
    ]


def test_rows_whose_ratios_disagree_are_refused() -> None:
    """Half the rows say 2 ranks, half say 4: no rank count is likelier than the other."""
    two = [line for line in _output(ranks=2).splitlines() if line.startswith(" ")]
    four = [line for line in _output(ranks=4).splitlines() if line.startswith(" ")]
    header = "#  size  count  type  redop  root  time algbw busbw #wrong time algbw busbw #wrong"
    text = "\n".join([header, *two[:2], *four[2:]]) + "\n"
    message = str(_error(_parse, text, op="all_reduce"))
    assert message.startswith("out.txt:1: cannot tell how many ranks ran: busbw/algbw = ")
    assert "fits 2 to 4 ranks alike" in message


def test_no_op_fits_a_table_that_no_op_prints() -> None:
    """A redop and a root, with the sizes of an op that gathers: no nccl-tests test."""
    text = _output(None, redop="sum", root=0, factor=1.0, per_rank=True)
    message = str(_error(_parse, text))
    assert "the output does not name its test and no op fits its table (redop sum, root 0" in (
        message
    )


def test_split_communicators_use_the_ranks_of_one() -> None:
    lines = [
        f"#  Rank {r:2d} Group {r % 2:2d} Pid 4242 on host-a device {r:2d} [0000:18:00] {H100}"
        for r in range(4)
    ]
    text = _output(ranks=4, factor=busbw_factor("all_reduce", 2), rank_lines=lines)
    result = _parse(text)
    assert result.world_size == 2
    assert _said(result) == ["ranks split into 2 communicators of 2 ranks each"]


def test_default_run_id_keeps_file_name_characters(tmp_path: Path) -> None:
    path = tmp_path / "all reduce (2 gpus).log"
    path.write_text(_text("all_reduce_2gpu.txt"))
    assert read_nccl_tests(path).id == "nccl-tests-all-reduce-2-gpus"
    assert read_nccl_tests(path, run_id="mine").id == "mine"


def test_a_timeout_mid_table_is_recorded_as_one() -> None:
    text = _output().replace("# Out of bounds", "host-a: Test timeout (30s) common.cu:330\n# x", 1)
    text = text.split("# x")[0]
    result = _parse(text)
    assert result.status == "timeout" and len(result.rows) == 8
