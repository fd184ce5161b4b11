"""`torchscale comm`: sizes, rows, footer and gate as pure functions; each op's check inside one
gloo process; real 2-rank gloo sweeps through the CLI, with a wrong result and a hang planted
through Python's own `sitecustomize` hook (a public seam: no flag in product code)."""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from typer.testing import CliRunner, Result

from tests.processes import processes_mentioning
from torchscale.contracts.catalog import COLLECTIVES as OPS  # the ops `torchscale comm` runs
from torchscale.contracts.comm_spec import CommSpec
from torchscale.contracts.errors import UsageError
from torchscale.contracts.schema.comm_result import CommResult, CommRow, OpSummary
from torchscale.contracts.units import parse_bytes
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.console.comm import comm_lines, narrow_table, row_line
from torchscale.offline.analysis.nccl_bandwidth import busbw_factor
from torchscale.offline.comm.gate import VERDICTS, gate
from torchscale.offline.comm.nccl_footer import average_busbw, summarize, wrong_total
from torchscale.offline.comm.nccl_tests import read_nccl_tests
from torchscale.offline.comm.rows import RankTiming, measured_row, percentile, unmeasured_row
from torchscale.orchestration.comm.sizes import size_ladder
from torchscale.orchestration.comm.sweep_launch import parse_ops
from torchscale.rank.programs import comm as rank_main
from torchscale.rank.programs.collective_ops import Unsupported, count_wrong, pattern, prepare
from torchscale.rank.worker.harness import Group


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [*map(str, args)])


# --- sizes and ops ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8", 8), ("64K", 65536), ("1M", 2**20), ("1G", 2**30), ("1GiB", 2**30), ("1GB", 10**9)],
)
def test_sizes_read_as_nccl_tests_reads_them(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["0", "-8", "1.5M", "8X", "", "M"])
def test_bad_sizes_are_one_line_errors(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_bytes(text, "--min-bytes")
    assert "--min-bytes" in str(caught.value) and "\n" not in str(caught.value)


def test_size_ladder_steps_like_nccl_tests() -> None:
    assert size_ladder(8, 128, 2) == [8, 16, 32, 64, 128]
    assert size_ladder(8, 100, 4) == [8, 32]  # max itself only when a step lands on it
    assert size_ladder(1024, 1024, 2) == [1024]
    with pytest.raises(UsageError, match="larger than"):
        size_ladder(1024, 8, 2)


def test_ops_parse_in_order_and_all_means_every_op() -> None:
    assert parse_ops("broadcast, all_reduce,broadcast") == ("broadcast", "all_reduce")
    assert parse_ops("all") == tuple(OPS)
    with pytest.raises(UsageError, match="unknown op 'allreduce'"):
        parse_ops("allreduce")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("allreduce", "all_reduce"), ("all-gather", "all_gather"), ("alltoall", "all_to_all")],
)
def test_a_misspelt_op_gets_the_op_it_resembles(typed: str, meant: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_ops(f"broadcast,{typed}")
    assert f"unknown op '{typed}' (did you mean '{meant}'?): choose from" in str(raised.value)


def test_an_op_like_nothing_gets_only_the_list() -> None:
    with pytest.raises(UsageError) as raised:
        parse_ops("gossip")
    assert str(raised.value).startswith("unknown op 'gossip': choose from all_reduce")


# --- rows, footer and gate -------------------------------------------------------------------


def _timing(rank: int, window_s: float, iters: int = 4, wrong: int | None = 0) -> RankTiming:
    return RankTiming(rank, f"host{rank}", window_s, [window_s / iters] * iters, wrong)


def test_row_time_is_window_over_iterations_averaged_over_ranks() -> None:
    timings = [_timing(0, 0.004), _timing(1, 0.008)]
    row = measured_row("all_reduce", 1_000_000, 250_000, "float32", timings, 4, 2)
    assert row.time_us == pytest.approx(1500.0)  # (1000 + 2000) / 2
    assert (row.time_us_min, row.time_us_max) == pytest.approx((1000.0, 2000.0))
    assert row.algbw_gbps == pytest.approx(1e6 / 1.5e-3 / 1e9)
    assert row.busbw_gbps == pytest.approx(row.algbw_gbps * busbw_factor("all_reduce", 2))
    assert row.wrong == 0 and row.redop == "sum" and row.root is None
    assert [r.time_us for r in row.ranks] == pytest.approx([1000.0, 2000.0])
    slowest = measured_row("all_reduce", 1_000_000, 250_000, "float32", timings, 4, 2, "max")
    assert slowest.time_us == pytest.approx(2000.0)


def test_row_percentiles_pool_every_rank_iteration() -> None:
    timings = [
        RankTiming(0, "h", 0.010, [0.001, 0.002, 0.003, 0.004], None),
        RankTiming(1, "h", 0.010, [0.001, 0.002, 0.003, 0.100], None),
    ]
    row = measured_row("broadcast", 4096, 1024, "float32", timings, 4, 2)
    pooled = [1000.0, 2000.0, 3000.0, 4000.0, 1000.0, 2000.0, 3000.0, 100000.0]
    assert row.iter_p50_us == pytest.approx(percentile(pooled, 50))
    assert row.iter_p99_us == pytest.approx(percentile(pooled, 99))
    assert row.iter_cv is not None and row.iter_cv > 1.0
    assert row.wrong is None and row.root == 0  # not checked; broadcast has a root


def test_percentile_matches_numpy_linear() -> None:
    import numpy as np

    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for q in (0, 25, 50, 90, 99, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_footer_averages_ok_rows_and_sums_wrong() -> None:
    rows = [
        CommRow(
            op="all_reduce",
            size_bytes=8,
            count=2,
            dtype="float32",
            placement="in-place",
            busbw_gbps=2.0,
            wrong=0,
        ),
        CommRow(
            op="all_reduce",
            size_bytes=16,
            count=4,
            dtype="float32",
            placement="in-place",
            busbw_gbps=4.0,
            wrong=3,
        ),
        unmeasured_row("all_gather", 16, 2, "float32", "unsupported", "unsupported by backend"),
    ]
    assert average_busbw(rows) == pytest.approx(3.0)
    assert wrong_total(rows) == 3
    summaries = summarize(rows, 2)
    assert [s.op for s in summaries] == ["all_reduce", "all_gather"]
    assert summaries[1].avg_busbw_gbps is None and summaries[1].wrong is None


def test_gate_judges_each_op_and_nothing_on_one_rank() -> None:
    def summary(op: str, bw: float | None, ranks: int = 8) -> OpSummary:
        return OpSummary(
            op=op, rows=1, avg_busbw_gbps=bw, wrong=0, busbw_factor=busbw_factor(op, ranks)
        )

    assert VERDICTS[gate([summary("all_reduce", 100.0)], 50.0, 8).code] == "passed"
    failed = gate([summary("all_reduce", 100.0), summary("broadcast", 20.0)], 50.0, 8)
    assert failed.code == "comm.gate.below" and failed.figures["busbw"] == {"broadcast": 20.0}
    assert "broadcast 20.00" in say(failed)
    one_rank = gate([summary("broadcast", 9000.0, 1)], 50.0, 1)
    assert VERDICTS[one_rank.code] == "unavailable" and "one rank" in say(one_rank)


def test_text_table_keeps_nccl_tests_columns_first() -> None:
    row = measured_row("all_reduce", 1048576, 262144, "float32", [_timing(0, 0.004)], 4, 2)
    fields = row_line(row).split()
    assert fields[:5] == ["1048576", "262144", "float32", "sum", "-1"]
    assert float(fields[5]) == pytest.approx(1000.0)
    bad = unmeasured_row("all_to_all", 64, 8, "float32", "unsupported", "unsupported by backend")
    assert row_line(bad).endswith("unsupported: unsupported by backend")


# --- each op's check, in one gloo process ----------------------------------------------------


@pytest.fixture()
def one_rank_group(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("op", [op for op in OPS if op != "send_recv"])
def test_every_op_checks_clean_on_one_rank(op: str, one_rank_group: None) -> None:
    prepared = prepare(op, 100, torch.float32, torch.device("cpu"), rank=0, ranks=1, check=True)
    prepared.run()
    assert prepared.verify() == 0


def test_send_recv_needs_two_ranks(one_rank_group: None) -> None:
    with pytest.raises(Unsupported, match="at least 2 ranks"):
        prepare("send_recv", 8, torch.float32, torch.device("cpu"), rank=0, ranks=1, check=True)


def test_a_planted_wrong_element_is_counted(
    one_rank_group: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = dist.all_reduce

    def corrupted(tensor: torch.Tensor, *args: object, **kwargs: object) -> object:
        out = real(tensor, *args, **kwargs)  # type: ignore[arg-type]
        tensor[3] += 1
        tensor[-1] = math.nan
        return out

    monkeypatch.setattr(dist, "all_reduce", corrupted)
    prepared = prepare(
        "all_reduce", 64, torch.bfloat16, torch.device("cpu"), rank=0, ranks=1, check=True
    )
    prepared.run()
    assert prepared.verify() == 2


def test_pattern_differs_between_ranks_at_every_index() -> None:
    a = pattern(0, 0, 1000, torch.float32, torch.device("cpu"))
    b = pattern(1, 0, 1000, torch.float32, torch.device("cpu"))
    assert count_wrong(a, b) == 1000


def test_an_op_the_backend_lacks_is_a_row_not_a_crash(
    one_rank_group: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = []

    def lacking(*args: object, **kwargs: object) -> None:
        calls.append(1)
        raise RuntimeError("ProcessGroupGloo does not support reduce_scatter")

    monkeypatch.setattr(dist, "reduce_scatter_single", lacking, raising=False)
    monkeypatch.setattr(dist, "reduce_scatter_tensor", lacking)
    spec = CommSpec(
        run_id="t",
        ops=["reduce_scatter"],
        sizes=[64, 128],
        dtype="float32",
        warmup_iters=1,
        iters=2,
        check=True,
        device="cpu",
        backend="gloo",
        result_path=str(tmp_path / "r.json"),
        progress_path=str(tmp_path / "p"),
    )
    state: dict[str, str] = {}
    rows = [
        rank_main._row("reduce_scatter", s, spec, Group(torch.device("cpu")), "h", state)
        for s in (64, 128)
    ]
    assert [r.status for r in rows if r] == ["unsupported", "unsupported"]
    assert rows[0] is not None and "does not support reduce_scatter" in (rows[0].reason or "")
    assert len(calls) == 1  # the second size is not tried again


# --- real 2-rank gloo runs through the CLI ---------------------------------------------------


def _stored(out: Path) -> CommResult:
    (path,) = sorted((out / "standalone" / "comm").glob("*.json"))
    return CommResult.model_validate_json(path.read_text())


@pytest.mark.slow  # a real 2-rank comm sweep under torchrun
def test_two_rank_sweep_checks_every_op_and_pairs(tmp_path: Path) -> None:
    json_copy = tmp_path / "copy.json"
    result = invoke(
        "comm",
        "--device",
        "cpu",
        "--gpus",
        "2",
        "--ops",
        "all",
        "--max-bytes",
        "64K",
        "--step-factor",
        "8",
        "--iters",
        "5",
        "--warmup",
        "2",
        "--check",
        "--pairs",
        "--pairs-bytes",
        "64K",
        "-o",
        tmp_path,
        "--output",
        json_copy,
    )
    assert result.exit_code == 0, result.output
    assert "# Out of bounds values : 0 OK" in result.output
    stored = _stored(tmp_path)
    assert json.loads(json_copy.read_text()) == json.loads(stored.model_dump_json())
    assert stored.world_size == 2 and stored.backend == "gloo" and stored.status == "ok"
    assert {r.op for r in stored.rows} == set(OPS)
    assert all(r.status == "ok" and r.wrong == 0 for r in stored.rows)
    assert all(len(r.ranks) == 2 and r.time_us and r.busbw_gbps for r in stored.rows)
    # all_gather at 8 B over 2 ranks of float32: one element each, S = 8 B
    gathers = [r for r in stored.rows if r.op == "all_gather"]
    assert [(r.size_bytes, r.count) for r in gathers] == [
        (8, 1),
        (64, 8),
        (512, 64),
        (4096, 512),
        (32768, 4096),
    ]
    assert [(p.a, p.b) for p in stored.pairs] == [(0, 1)] and stored.pairs[0].bandwidth_gbps
    assert stored.wrong_total == 0 and stored.avg_busbw_gbps
    # the footer, then any noise and warning lines (when the suite runs beside other work)
    lines = [
        line
        for line in comm_lines(stored)
        if not line.startswith(("# warning: ", "# Inside the noise"))
    ]
    assert lines[-2].startswith("# Avg bus bandwidth")
    assert not processes_mentioning(str(tmp_path))


SEAM = """
import os
if os.environ.get("RANK") == "1":
    import torch.distributed as dist
    _real = dist.all_reduce
    def _planted(tensor, *args, **kwargs):
        out = _real(tensor, *args, **kwargs)
        {action}
        return out
    dist.all_reduce = _planted
"""


def _plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str) -> None:
    """Every rank started from here imports this sitecustomize first (Python's site hook)."""
    seam = tmp_path / "seam"
    seam.mkdir()
    (seam / "sitecustomize.py").write_text(textwrap.dedent(SEAM.format(action=action)))
    path = os.pathsep.join(filter(None, [str(seam), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)


@pytest.mark.slow  # a real 2-rank comm sweep under torchrun
def test_a_wrong_result_on_one_rank_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path, monkeypatch, "tensor.view(-1)[:3] += 7")
    result = invoke(
        "comm",
        "--device",
        "cpu",
        "--gpus",
        "2",
        "--min-bytes",
        "1K",
        "--max-bytes",
        "4K",
        "--iters",
        "3",
        "--warmup",
        "1",
        "-o",
        tmp_path,
    )
    assert result.exit_code == 1, result.output
    assert "# Out of bounds values : 9 FAILED" in result.output  # 3 sizes x 3 elements
    assert [r.wrong for r in _stored(tmp_path).rows] == [3, 3, 3]


@pytest.mark.slow  # a real 2-rank comm sweep under torchrun
def test_a_hung_collective_marks_its_row_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(
        tmp_path, monkeypatch, "import time\n        if tensor.numel() >= 1024: time.sleep(3600)"
    )
    result = invoke(
        "comm",
        "--device",
        "cpu",
        "--gpus",
        "2",
        "--min-bytes",
        "1K",
        "--max-bytes",
        "8K",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--timeout",
        "20",
        "-o",
        tmp_path,
    )
    assert result.exit_code == 1, result.output
    stored = _stored(tmp_path)
    assert stored.status == "timeout" and stored.error
    assert [(r.size_bytes, r.status) for r in stored.rows] == [
        (1024, "ok"),
        (2048, "ok"),
        (4096, "failed"),
    ]
    assert "timeout" in (stored.rows[-1].reason or "") or "hang" in (stored.rows[-1].reason or "")
    assert not processes_mentioning(str(tmp_path))


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--min-bytes", "0"], "must be positive"),
        (["--min-bytes", "1M", "--max-bytes", "1K"], "larger than"),
        (["--ops", "all_reduce,gossip"], "unknown op 'gossip'"),
        (["--dtype", "int8"], "--dtype 'int8' is not supported"),
        (["--op", "all_reduce"], "--op goes with --import"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], expected: str, tmp_path: Path) -> None:
    result = invoke("comm", "--device", "cpu", *args, "-o", tmp_path)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output


def test_cuda_without_a_gpu_says_so(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    result = invoke("comm", "--device", "cuda", "-o", tmp_path)
    assert result.exit_code == 2 and "no CUDA GPU is visible" in result.output


FIXTURES = Path(__file__).parents[1] / "fixtures"


def _importable() -> list[Path]:
    found = []
    for path in sorted([*FIXTURES.glob("nccl_tests*/*.txt"), *FIXTURES.glob("nccl_tests/*.json")]):
        try:
            read_nccl_tests(path)
        except UsageError:
            continue
        found.append(path)
    return found


@pytest.mark.parametrize("path", _importable(), ids=lambda p: p.name)
@pytest.mark.parametrize("width", [120, 80, 60])
def test_narrow_table_fits_the_width_and_keeps_every_figure(path: Path, width: int) -> None:
    result = read_nccl_tests(path)
    full = comm_lines(result)
    assert comm_lines(result, 500) == full  # a wide terminal gets nccl-tests' own layout
    narrow = comm_lines(result, width)
    assert all(len(line) <= width for line in narrow), [x for x in narrow if len(x) > width]
    text = "\n".join(narrow)
    for row in result.rows:
        assert str(row.size_bytes) in text
        if row.status == "ok" and row.busbw_gbps is not None:
            assert row_line(row).split()[7] in text  # busbw as printed, never cut


def test_narrow_table_shows_root_only_for_rooted_ops() -> None:
    reduce_row = measured_row("all_reduce", 1048576, 262144, "float32", [_timing(0, 0.004)], 4, 2)
    narrow = "\n".join(narrow_table([reduce_row]))
    assert "root" not in narrow and "count" not in narrow
    header = narrow_table([reduce_row])[0].split()
    assert header[:3] == ["#", "size", "type"] and "busbw" in header


def test_narrow_table_tells_the_placements_apart() -> None:
    result = read_nccl_tests(FIXTURES / "nccl_tests" / "all_gather_8rank_2host.txt")
    lines = comm_lines(result, 80)
    header = next(line for line in lines if line.startswith("#") and "busbw" in line)
    assert header.split()[:3] == ["#", "size", "place"]
    rows = [line.split() for line in lines if not line.startswith("#")]
    assert {row[1] for row in rows} == {"out", "in"}


# --- the busy-machine caveat of a comm run ----------------------------------------------------


def test_a_comm_run_on_a_busy_machine_says_so() -> None:
    """Other processes' cores = the host's busy CPU less the launch's (its waited-for
    children) and this process's, over the wall; judged by the cells' busy rule."""
    from torchscale.orchestration.comm.machine_load import LoadEdge, busy_warning, read_edge

    start = LoadEdge(at_s=0.0, host_busy_s=100.0, children_s=5.0, own_s=1.0, cores=2)
    # 10 s: the launch's 2 ranks used 10 CPU s, this process 0.5: the host 25.5 -> 1.5 others
    busy = LoadEdge(at_s=10.0, host_busy_s=125.5, children_s=15.0, own_s=1.5, cores=2)
    warning = busy_warning(start, busy, ranks=2)
    assert warning is not None and warning.code == "comm.busy_machine"
    assert warning.figures == pytest.approx({"other_cores": 1.5, "cores": 2, "run_cores": 1.05})
    assert say(warning).startswith("busy machine: other processes used 1.5 of 2 cores during the")
    quiet = LoadEdge(at_s=10.0, host_busy_s=111.0, children_s=15.0, own_s=1.5, cores=2)
    assert busy_warning(start, quiet, ranks=2) is None
    assert busy_warning(None, busy, ranks=2) is None and busy_warning(start, None, ranks=2) is None
    now = read_edge()  # this machine (Linux, psutil): every counter read
    assert now is not None and now.cores is not None and now.cores >= 1
