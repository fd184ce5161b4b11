"""Real nccl-tests output as people paste it (fixtures/nccl_tests_corpus, sources in its
SOURCES.md): every file imports with the op, ranks and rows expected, or is refused with the
reason expected; then each inference and each refusal on its own."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from torchscale.contracts.errors import TorchScaleError
from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import CommResult
from torchscale.contracts.wording import say
from torchscale.offline.comm.nccl_tests import (
    NcclTestsFormatError,
    parse_text,
    read_nccl_tests,
)

CORPUS = Path(__file__).parents[1] / "fixtures" / "nccl_tests_corpus"
ROW_PROBLEM = ("comm.import.row_", "comm.import.more_rows")


@dataclass(frozen=True)
class Expected:
    """What importing one corpus file gives; `refused`: a part of the one-line refusal."""

    ops: tuple[str, ...] = ()
    ranks: int = 0
    rows: int = 0
    dtype: str = "float32"
    nodes: int | None = None  # None: the output lists no hosts
    inferred: tuple[str, ...] = ()  # what the first run inferred
    warnings: tuple[str, ...] = ()  # each a part of some warning
    status: str = "ok"
    refused: str = ""


EXPECTED: dict[str, Expected] = {
    "a3mega_h100_hash_stripped_quoted_cmd.txt": Expected(
        ops=("all_reduce",),
        ranks=16,
        rows=62,
        nodes=2,
        inferred=("op",),
        warnings=("inferred the op, all_reduce: from the command line 'mpirun -v",),
    ),
    "deepops_k8s_dgx_a100_table_only.txt": Expected(
        ops=("all_reduce",),
        ranks=16,
        rows=60,
        inferred=("op", "ranks"),
        warnings=(
            "inferred the op, all_reduce: from the table (older columns, redop sum, no root",
            "inferred 16 ranks: busbw/algbw = 1.875 -> 16 (2(n-1)/n)",
            "prints 'error', the largest deviation of a result, not a count",
        ),
    ),
    "deepops_validation_off_indented.txt": Expected(
        refused="cannot tell how many ranks ran: busbw/algbw = 1.9988 fits 1190 to 1871 ranks"
    ),
    "dgx2_v100_five_runs_oldest.txt": Expected(
        ops=("all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"),
        ranks=12,
        rows=310,
        nodes=1,
        inferred=("op",),
        warnings=(
            "run at line 2: inferred the op, all_gather: from the command line 'Running: ",
            "all_gather's algbw as S x (n-1)/n / t and busbw = algbw: algbw_gbps rescaled",
            "reduce_scatter's algbw as S x (n-1)/n / t",
            "the footer counts 4 results out of bounds",
        ),
    ),
    "eks_efa_t4_mpirun_tagged.txt": Expected(
        refused="all_reduce on 2 ranks and send_recv on 2 ranks fit its table alike"
    ),
    "gtx1080_macos_elided_rows.txt": Expected(
        ops=("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter"),
        ranks=2,
        rows=60,
        inferred=("op", "ranks"),
        warnings=(
            "inferred the op, all_reduce: from the label '===begin all_reduce_perf test==='",
            "inferred 2 ranks: busbw/algbw = 1 -> 2 (2(n-1)/n)",
            "inferred 2 ranks: size / (count x type size) = 2 on every row",
            "inferred 2 ranks: nThread x nGpus = 2 in the header, one process",
            "Avg bus bandwidth 0.414483 GB/s is not the mean busbw of the rows",
        ),
    ),
    "h100_pair_second_run_cut_off.txt": Expected(
        ops=("all_to_all",),
        ranks=2,
        rows=20,
        dtype="float64",
        nodes=2,
        warnings=("a run at line 27 stops after its table header, before any row",),
    ),
    "h100_two_nodes_first_run_failed.txt": Expected(
        ops=("send_recv",),
        ranks=8,
        rows=20,
        dtype="float64",
        nodes=2,
        warnings=("a run at line 1 failed before its table",),
        status="failed",
    ),
    "h800_alltoall_failed_in_first_row.txt": Expected(
        refused="nccl-tests failed before its first row (line 27: 2097152 32768 float none -1"
    ),
    "rccl_r9700_two_hosts.txt": Expected(ops=("all_reduce",), ranks=2, rows=50, nodes=2),
    "rtx5090_one_gpu_prompt.txt": Expected(
        ops=("all_reduce",),
        ranks=1,
        rows=50,
        nodes=1,
        inferred=("op",),
        warnings=("from the command line 'user@GENOA-06:~/nccl-tests$ ./build/all_reduce_perf",),
    ),
    "skypilot_h200_prefixed_unnamed.txt": Expected(
        refused="all_gather on 16 ranks and all_to_all on 16 ranks fit its table alike"
    ),
}


def _corpus(name: str) -> str:
    return (CORPUS / name).read_text()


def _parse(text: str, name: str = "out.txt", op: str | None = None) -> CommResult:
    return parse_text(text, op=op, source_name=name, run_id="r")


def _refusal(call: Callable[..., object], *args: object, **kwargs: object) -> str:
    """The one-line refusal a call raises (exit code 2)."""
    with pytest.raises(TorchScaleError) as caught:
        call(*args, **kwargs)
    error = caught.value
    assert isinstance(error, NcclTestsFormatError) and error.exit_code == 2
    assert error.lines() == [str(error)] and "\n" not in str(error)
    return str(error)


def _first_launch(result: CommResult) -> dict[str, object]:
    launch = result.launch
    runs = launch.get("runs")
    return runs[0] if isinstance(runs, list) else launch


# --- the whole corpus -----------------------------------------------------------------------------


def test_every_corpus_file_has_a_source_and_an_expectation() -> None:
    files = sorted(p.name for p in CORPUS.glob("*.txt"))
    assert files == sorted(EXPECTED)
    sources = (CORPUS / "SOURCES.md").read_text()
    assert all(f"`{name}`" in sources for name in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_imports_as_expected(name: str) -> None:
    expected = EXPECTED[name]
    if expected.refused:
        assert expected.refused in _refusal(read_nccl_tests, CORPUS / name)
        return
    result = read_nccl_tests(CORPUS / name)
    assert tuple(s.op for s in result.summaries) == expected.ops
    assert (result.world_size, len(result.rows), result.dtype) == (
        expected.ranks,
        expected.rows,
        expected.dtype,
    )
    assert result.status == expected.status
    if expected.nodes is None:
        assert "nodes" in result.unavailable
    else:
        assert result.nodes == expected.nodes and result.unavailable == {}
    assert tuple(_first_launch(result).get("inferred", {})) == expected.inferred  # type: ignore[arg-type]
    said = [say(w) for w in result.warnings]
    for part in expected.warnings:
        assert any(part in w for w in said), (part, said)
    # every row follows nccl-tests' own formulas: the outputs (and their transcription) are whole
    assert not [w for w in result.warnings if w.code.startswith(ROW_PROBLEM)]


# --- the op ---------------------------------------------------------------------------------------


def test_op_from_a_command_line_is_recorded_with_the_command() -> None:
    result = read_nccl_tests(CORPUS / "a3mega_h100_hash_stripped_quoted_cmd.txt")
    launch = result.launch
    assert launch["program"] == "all_reduce_perf"
    assert "-np 16 -npernode 8" in launch["command"]  # the five quoted lines, joined
    assert launch["inferred"] == {
        "op": "from the command line 'mpirun -v --mca btl self,tcp --mca btl_tcp_if_include "
        "enp0s12 --hostfile ~/hostfile -np 16 -npern...'"
    }


def test_each_run_takes_the_command_line_before_it() -> None:
    result = read_nccl_tests(CORPUS / "dgx2_v100_five_runs_oldest.txt")
    runs = result.launch["runs"]
    assert [r["program"] for r in runs] == [
        "all_gather_perf",
        "all_reduce_perf",
        "broadcast_perf",
        "reduce_perf",
        "reduce_scatter_perf",
    ]
    assert all("-g 12" in r["command"] for r in runs)


def test_op_from_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "all_gather_perf_h200.log"
    shutil.copy(CORPUS / "skypilot_h200_prefixed_unnamed.txt", path)
    result = read_nccl_tests(path)
    assert {r.op for r in result.rows} == {"all_gather"}
    assert result.launch["inferred"] == {"op": "from the file name all_gather_perf_h200.log"}
    assert result.world_size == 16  # from the rank lines, so not inferred


def test_a_file_name_the_table_contradicts_is_ignored() -> None:
    result = _parse(_corpus("deepops_k8s_dgx_a100_table_only.txt"), name="broadcast.txt")
    assert {r.op for r in result.rows} == {"all_reduce"}
    unfit = {"name": "broadcast.txt", "op": "broadcast"}
    assert Finding(code="comm.import.file_name_unfit", figures=unfit) in result.warnings


def test_op_from_the_table() -> None:
    result = read_nccl_tests(CORPUS / "deepops_k8s_dgx_a100_table_only.txt")
    assert result.launch["inferred"]["op"] == (
        "from the table (older columns, redop sum, no root, size = count x type size x 1): the "
        "only op that fits"
    )


def test_the_callers_op_wins_over_a_command_line_and_says_so() -> None:
    result = _parse(_corpus("rtx5090_one_gpu_prompt.txt"), op="reduce_scatter")
    assert {r.op for r in result.rows} == {"reduce_scatter"}  # one rank: both fit the table
    said = [say(w) for w in result.warnings]
    assert "the command line runs all_reduce_perf: imported as reduce_scatter" in said
    assert "inferred" not in result.launch


def test_two_ops_that_print_the_same_table_are_refused_until_named() -> None:
    text = _corpus("skypilot_h200_prefixed_unnamed.txt")
    message = _refusal(_parse, text)
    assert message.endswith(
        "all_gather on 16 ranks and all_to_all on 16 ranks fit its table alike (no redop, root "
        "-1, size = count x type size x 16): pass the op"
    )
    for op in ("all_gather", "all_to_all"):
        result = _parse(text, op=op)
        assert (result.world_size, result.nodes, len(result.rows)) == (16, 2, 48)
        assert result.device_name == "NVIDIA H200" and result.warnings == []


def test_no_op_fitting_the_table_is_refused() -> None:
    text = _corpus("deepops_k8s_dgx_a100_table_only.txt").replace("     sum  ", "    none  ")
    message = _refusal(_parse, text)
    assert "no op fits its table (older columns, no redop, no root, size = count x type" in (
        message
    )


# --- the ranks ------------------------------------------------------------------------------------


def test_ranks_from_busbw_over_algbw() -> None:
    result = read_nccl_tests(CORPUS / "deepops_k8s_dgx_a100_table_only.txt")
    assert result.world_size == 16
    assert result.launch["inferred"]["ranks"] == "busbw/algbw = 1.875 -> 16 (2(n-1)/n)"
    assert result.summaries[0].busbw_factor == pytest.approx(30 / 16)


def test_ranks_from_size_over_count() -> None:
    result = read_nccl_tests(CORPUS / "gtx1080_macos_elided_rows.txt")
    inferred = [run["inferred"]["ranks"] for run in result.launch["runs"]]
    assert inferred[1] == inferred[4] == "size / (count x type size) = 2 on every row"


def _broadcast_run(drop: str) -> str:
    """The DGX-2 log's broadcast run (with its `Running:` line), without lines matching `drop`."""
    text = _corpus("dgx2_v100_five_runs_oldest.txt")
    run = "Running:" + text.split("Running:")[3]
    assert "./build/broadcast_perf" in run.splitlines()[0]
    return "\n".join(line for line in run.splitlines() if not re.search(drop, line)) + "\n"


def test_ranks_from_a_command_line() -> None:
    result = _parse(_broadcast_run(r"Rank\s+\d+ Pid"))
    assert (result.world_size, {r.op for r in result.rows}) == (12, {"broadcast"})
    assert result.launch["inferred"]["ranks"] == "the command line: one process x -t 1 x -g 12"


def test_ranks_from_the_header_assume_one_process() -> None:
    result = _parse(_broadcast_run(r"Rank\s+\d+ Pid|^Running:"))
    assert result.world_size == 12
    assert result.launch["inferred"] == {
        "op": "from the table (older columns, no redop, root 0, size = count x type size x 1): "
        "the only op that fits",
        "ranks": "nThread x nGpus = 12 in the header, one process",
    }


def test_broadcast_with_nothing_to_count_its_ranks_is_refused() -> None:
    text = _broadcast_run(r"Rank\s+\d+ Pid|^Running:|nThread")
    assert _refusal(_parse, text).endswith(
        "cannot tell how many ranks ran: busbw = algbw for broadcast on any number of ranks, "
        "and the output has no '#  Rank' lines and no command line with -np/-g"
    )


def test_a_coarse_busbw_over_algbw_is_refused_with_its_range() -> None:
    message = _refusal(read_nccl_tests, CORPUS / "deepops_validation_off_indented.txt")
    assert "(2(n-1)/n, printed to 2 decimals)" in message


def test_a_command_line_that_disagrees_with_the_table_is_a_warning() -> None:
    command = "mpirun -np 32 /nccl_tests/build/all_reduce_perf -b 8 -e 4G -f2 -g 1\n"
    result = _parse(command + _corpus("deepops_k8s_dgx_a100_table_only.txt"))
    assert result.world_size == 16
    asked = {"asked": 32, "how": "-np 32 x -t 1 x -g 1", "ranks": 16}
    assert Finding(code="comm.import.command_ranks", figures=asked) in result.warnings


# --- pasted shapes --------------------------------------------------------------------------------


def test_launcher_prefixes_and_interleaved_info_lines() -> None:
    result = _parse(_corpus("eks_efa_t4_mpirun_tagged.txt"), op="all_reduce")
    assert (result.world_size, result.nodes, result.device_name) == (2, 2, "Tesla T4")
    assert (len(result.rows), result.rows[0].size_bytes, result.rows[2].size_bytes) == (62, 0, 0)
    assert result.warnings == [] and result.avg_busbw_gbps == pytest.approx(1.15327, abs=0.005)


def test_rank_lines_without_a_group_and_the_oldest_columns() -> None:
    result = read_nccl_tests(CORPUS / "dgx2_v100_five_runs_oldest.txt")
    assert (result.device_name, result.nodes) == ("Tesla V100-SXM3-32GB", 1)
    broadcast = [r for r in result.rows if r.op == "broadcast"]
    assert all(r.root == 0 and r.redop is None for r in broadcast)
    assert all(r.redop is None and r.root is None for r in result.rows if r.op == "all_gather")


def test_the_error_column_is_not_a_count_of_wrong_elements() -> None:
    result = read_nccl_tests(CORPUS / "dgx2_v100_five_runs_oldest.txt")
    assert all(r.wrong is None for r in result.rows)
    assert (result.check, result.wrong_total) == (False, None)


def test_the_oldest_all_gather_bandwidths_are_rescaled_to_their_names() -> None:
    result = read_nccl_tests(CORPUS / "dgx2_v100_five_runs_oldest.txt")
    row = next(r for r in result.rows if r.op == "all_gather" and r.size_bytes == 1048560)
    # printed: 72.82 us, algbw 13.20, busbw 13.20 (algbw was S x 11/12 / t)
    assert row.time_us == 72.82 and row.busbw_gbps == 13.20
    assert row.algbw_gbps == pytest.approx(13.20 * 12 / 11)
    assert row.algbw_gbps == pytest.approx(row.size_bytes / row.time_us / 1e3, rel=1e-3)


def test_a_table_cut_in_its_last_line_drops_that_line() -> None:
    text = _corpus("rccl_r9700_two_hosts.txt")
    last = "   134217728      33554432     float     sum      -1    12463   10.77   10.77      0"
    cut = text[: text.index(last) + len(last) - 22] + "\n"  # ends in "12463   10.7"
    result = _parse(cut)
    assert len(result.rows) == 48 and result.rows[-1].size_bytes == 67108864
    said = [say(w) for w in result.warnings]
    assert any(w.startswith("dropped the last table line, cut short: ") for w in said)
    assert Finding(code="comm.import.no_footer", figures={"rows": 24}) in result.warnings


def test_a_broken_line_before_the_footer_is_refused() -> None:
    text = _corpus("rccl_r9700_two_hosts.txt")
    row = "    16777216       4194304     float     sum      -1   1648.6   10.18   10.18      0"
    broken = text.replace(row + "   1646.1   10.19   10.19      0", row + "   1646.1   10.19")
    assert broken != text
    assert "a table row with 11 columns where the header has 13" in _refusal(_parse, broken)


def test_a_broken_last_line_before_the_footer_is_refused() -> None:
    """The footer says the table was printed whole: its last line is broken, not cut off."""
    text = _corpus("rccl_r9700_two_hosts.txt")
    last = "   134217728      33554432     float     sum      -1    12463   10.77   10.77      0"
    broken = text.replace(last + "    12457   10.77   10.77      0", last + "    12457   10.77")
    assert broken != text
    line = broken.splitlines().index(last + "    12457   10.77") + 1
    message = _refusal(_parse, broken)
    assert f"out.txt:{line}: a table row with 11 columns where the header has 13" in message


def test_a_run_cut_after_its_header_is_skipped() -> None:
    result = read_nccl_tests(CORPUS / "h100_pair_second_run_cut_off.txt")
    assert {r.op for r in result.rows} == {"all_to_all"}
    assert result.environment == {"nccl_tests_version": "2.17.6", "nccl_version": 22807}
    assert {r.wrong for r in result.rows if r.placement == "in-place"} == {None}  # N/A


def test_times_printed_with_an_exponent() -> None:
    result = read_nccl_tests(CORPUS / "h100_two_nodes_first_run_failed.txt")
    assert result.rows[-2].time_us == 1.6e07 and result.rows[-1].time_us == 1.7e07


def test_a_failed_run_keeps_its_failure_line_as_a_figure() -> None:
    result = read_nccl_tests(CORPUS / "h100_two_nodes_first_run_failed.txt")
    [warning] = result.warnings
    assert warning.code == "comm.import.run_failed" and warning.figures["line"] == 1
    assert warning.figures["failure"].startswith("line 18: cnode2-001: Test NCCL failure")


# --- tables pasted without their column header ----------------------------------------------------


def _without_column_headers(text: str) -> str:
    """The text with every table's column-header line removed (`#  size  count  type ...`),
    as a paste that kept only the rows (and whatever else was around them) leaves it."""
    kept = []
    for line in text.splitlines(keepends=True):
        body = PREFIX_AND_HASH.sub("", line).split()
        if body[:3] != ["size", "count", "type"]:
            kept.append(line)
    return "".join(kept)


PREFIX_AND_HASH = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[\d+,\d+\]<std(?:out|err)>:)?[\s#>]*")


@pytest.mark.parametrize(
    "name",
    sorted(n for n, e in EXPECTED.items() if not e.refused and n != "eks_efa_t4_mpirun_tagged.txt"),
)
def test_every_corpus_table_reads_the_same_without_its_column_header(name: str) -> None:
    """The columns of a header-less row come from the row itself (13: nccl-tests 2.x's
    size count type redop root; 12: redop or root; 11: neither; then #wrong or the older
    error): every corpus file with its column headers cut imports the same rows, op and ranks
    as with them, saying where it read the columns from the rows."""
    source = CORPUS / name
    with_header = _parse(source.read_text(), name=name)
    bare = _parse(_without_column_headers(source.read_text()), name=name)
    assert [s.op for s in bare.summaries] == [s.op for s in with_header.summaries]
    assert bare.world_size == with_header.world_size
    assert bare.rows == with_header.rows
    assert any("no column header: read the table's" in say(w) for w in bare.warnings)
    assert not any(w.code == "comm.import.no_column_header" for w in with_header.warnings)


def test_rows_alone_import_with_the_op_from_the_file_name() -> None:
    """Only the rows of a vendor doc's table (no header, no rank lines, no command, no footer):
    the op from the file name, the ranks from busbw/algbw, the columns from the rows."""
    text = _corpus("a3mega_h100_hash_stripped_quoted_cmd.txt")
    rows = "".join(line for line in text.splitlines(keepends=True) if line.strip()[:1].isdigit())
    result = _parse(rows, name="all_reduce_perf_16gpu.txt")
    full = _parse(text)
    assert [s.op for s in result.summaries] == ["all_reduce"]
    assert result.world_size == 16 and result.rows == full.rows
    launch = _first_launch(result)
    assert launch["inferred"] == {
        "op": "from the file name all_reduce_perf_16gpu.txt",
        "ranks": "busbw/algbw = 1.8749 -> 16 (2(n-1)/n)",
    }
    assert any(w.code == "comm.import.no_footer" for w in result.warnings)


def test_rows_that_fit_no_layout_are_still_refused() -> None:
    """A row shape nccl-tests never printed (or in-place-only rows, which a cut-off row
    would look like) is not guessed at."""
    rows = "8 2 float sum -1 1.0 0.00 0.00 0 1.0\n16 4 float sum -1 1.0 0.00 0.00 0 1.0\n"
    assert "not nccl-tests output" in _refusal(_parse, rows, name="all_reduce.txt")
