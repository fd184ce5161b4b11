"""`comm` marks the sizes inside the noise: a row that took longer than a larger size of the
same op cannot be the link's time, and the footer says which."""

from __future__ import annotations

from torchscale.contracts.schema.comm_result import CommResult
from torchscale.interfaces.console.comm import footer_lines
from torchscale.offline.comm.nccl_footer import add_footer, inside_noise
from torchscale.offline.comm.rows import RankTiming, measured_row


def _row(size: int, time_s: float, op: str = "all_reduce"):  # type: ignore[no-untyped-def]
    iters = 4
    timings = [RankTiming(r, f"h{r}", time_s * iters, [time_s] * iters, 0) for r in (0, 1)]
    return measured_row(op, size, size // 4, "float32", timings, iters, 2)


def test_a_size_slower_than_a_larger_one_is_inside_the_noise() -> None:
    # 512 B took 18 ms while 1 KiB took 0.5 ms: the 512 B time measured something else
    rows = [_row(256, 400e-6), _row(512, 18e-3), _row(1024, 500e-6), _row(2048, 700e-6)]
    assert [r.size_bytes for r in inside_noise(rows)] == [512]
    # a clean ladder (time grows with size) has nothing inside the noise
    clean = [_row(256, 400e-6), _row(512, 450e-6), _row(1024, 500e-6)]
    assert inside_noise(clean) == []
    # ops are compared only with themselves
    mixed = [_row(512, 18e-3, "broadcast"), _row(1024, 500e-6)]
    assert inside_noise(mixed) == []


def test_the_footer_names_the_sizes_inside_the_noise() -> None:
    rows = [_row(256, 400e-6), _row(512, 18e-3), _row(1024, 500e-6)]
    # only the footer's fields matter here: the rest of a result is the launch's
    result = add_footer(CommResult.model_construct(rows=rows, world_size=2))
    (line,) = [line for line in footer_lines(result) if line.startswith("# Inside the noise")]
    assert "1 of 3 rows" in line and line.endswith("all_reduce 512")
