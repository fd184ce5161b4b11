"""The JSON reader: the document nccl-tests writes with `-J file`, read into the same run
record the text scanner fills.

What it holds (format versions 2 and 3): `args` (argv: the only place naming the test, and the
`-a` setting), `config` (nthreads, ngpus, warmup_iters, iterations, validation, and `devices`:
the first rank line of each process), `results` (size, count, type, redop, root, and
out_of_place/in_place {time or cpu_time, alg_bw, bus_bw, nwrong}), `average_bus_bandwidth`. A
run that fails still closes the file, without the footer keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.comm_result import AcrossRanks, Placement
from torchscale.offline.analysis.numbers import finite
from torchscale.offline.comm.nccl_tests.records import (
    Figures,
    RankLine,
    RawRow,
    Run,
    clip,
    fail,
    location,
    read_redop,
    wrong_count,
)

# nccl-tests' -a: 0 = rank 0's time, which torchscale's across_ranks has no name for
AVERAGE_SETTINGS: dict[int, AcrossRanks | None] = {0: None, 1: "avg", 2: "min", 3: "max"}
JSON_PLACEMENTS: tuple[tuple[str, Placement], ...] = (
    ("out_of_place", "out-of-place"),
    ("in_place", "in-place"),
)
JSON_RESOLUTION = 5e-7  # util.cu writes doubles with "%lf": six decimals


def scan_json(text: str, source: str) -> Run:
    """The `-J` document as a run: the same fields the text carries, from their JSON keys."""
    doc = _json_document(text, source)
    config: dict[str, Any] = doc["config"]
    run = Run(line=1, ranks_are_processes=True)
    args = [a for a in doc.get("args", []) if isinstance(a, str)]
    run.program = PurePosixPath(args[0]).name if args else None
    run.settings = _json_settings(config)
    run.ranks = [_json_rank(d) for d in config.get("devices", []) if isinstance(d, dict)]
    run.ended = isinstance(doc.get("average_bus_bandwidth"), dict)
    run.rows = _json_rows(doc["results"], run.ended, source)
    run.cputime = any(
        isinstance(r.get(p), dict) and "cpu_time" in r[p]
        for r in doc["results"]
        if isinstance(r, dict)
        for p, _ in JSON_PLACEMENTS
    )
    _json_footer(run, doc)
    _json_context(run, doc, args)
    return run


def _json_document(text: str, source: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(
            f"{source}:{exc.lineno}:{exc.colno}",
            f"not valid JSON ({exc.msg}); nccl-tests leaves its -J file like this when the run "
            "is killed: import its text output instead",
        ) from None
    if isinstance(doc, dict) and doc.get("kind") == "torchscale.comm":
        raise fail(source, "a torchscale comm result, not nccl-tests output: nothing to import")
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("config"), dict)
        or not isinstance(doc.get("results"), list)
    ):
        raise fail(
            source, "not nccl-tests JSON: no 'config' object and 'results' list (as -J writes)"
        )
    return doc


def _json_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _json_float(value: Any) -> float | None:
    """util.cu writes NaN as the string "nan"; anything not a finite number is None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return finite(float(value))
    except ValueError:
        return None


def _json_settings(config: Mapping[str, Any]) -> dict[str, int]:
    keys = {
        "nthreads": "nthreads",
        "ngpus": "ngpus",
        "warmup": "warmup_iters",
        "iters": "iterations",
        "agg": "aggregated_iterations",
        "validation": "validation",
        "graph": "graph",
    }
    found = {name: _json_int(config.get(key)) for name, key in keys.items()}
    return {name: value for name, value in found.items() if value is not None}


def _json_rank(device: Mapping[str, Any]) -> RankLine:
    return RankLine(
        rank=_json_int(device.get("rank")) or 0,
        group=_json_int(device.get("group")) or 0,
        pid=_json_int(device.get("pid")) or 0,
        host=str(device.get("hostname", "")),
        device_name=str(device.get("device_info", "")).strip(),
    )


def _json_rows(results: Sequence[Any], ended: bool, source: str) -> list[RawRow]:
    """Every complete record; a run that died leaves its last record half written."""
    rows = []
    for index, record in enumerate(results):
        loc = f"results[{index}]"
        last = index == len(results) - 1
        if not isinstance(record, dict) or not isinstance(record.get("in_place"), dict):
            if last and not ended:
                break
            raise fail(location(source, loc), "a result without its in_place figures")
        rows.append(_json_row(record, loc, source))
    return rows


def _json_row(record: Mapping[str, Any], loc: str, source: str) -> RawRow:
    size, count = _json_int(record.get("size")), _json_int(record.get("count"))
    if size is None or count is None or not isinstance(record.get("type"), str):
        raise fail(location(source, loc), "a result without its size, count and type")
    placements: list[tuple[Placement, Figures]] = []
    for key, placement in JSON_PLACEMENTS:
        figures = record.get(key)
        if isinstance(figures, dict):  # out_of_place is null in trace replay
            placements.append((placement, _json_figures(figures)))
    return RawRow(
        loc=loc,
        size=size,
        count=count,
        type_name=record["type"],
        redop=read_redop(str(record.get("redop", ""))),
        root=_json_int(record.get("root")),
        placements=tuple(placements),
    )


def _json_figures(figures: Mapping[str, Any]) -> Figures:
    time_us = _json_float(figures.get("time", figures.get("cpu_time")))
    wrong = _json_float(figures.get("nwrong"))
    return Figures(
        time_us=time_us,
        algbw=_json_float(figures.get("alg_bw")),
        busbw=_json_float(figures.get("bus_bw")),
        wrong=wrong_count(wrong),
        time_res=JSON_RESOLUTION,
        algbw_res=JSON_RESOLUTION,
        busbw_res=JSON_RESOLUTION,
    )


def _json_footer(run: Run, doc: Mapping[str, Any]) -> None:
    average = doc.get("average_bus_bandwidth")
    if isinstance(average, dict) and (value := _json_float(average.get("bandwidth"))) is not None:
        run.footer_busbw = (value, JSON_RESOLUTION)
    bounds = doc.get("out_of_bounds")
    if isinstance(bounds, dict):
        run.footer_wrong = _json_int(bounds.get("count"))
    errors = [e for e in doc.get("errors", []) if isinstance(e, str) and e.strip()]
    if errors:
        run.failure = f"errors: {clip('; '.join(errors))}"
    elif not run.ended:
        run.failure = "the JSON ends before nccl-tests' footer (average_bus_bandwidth)"


def _json_context(run: Run, doc: Mapping[str, Any], args: list[str]) -> None:
    """argv (-a, the program), the NCCL version, the start and end times."""
    run.launch = {"args": args}
    average = _average_setting(args)
    if average is not None:
        across = AVERAGE_SETTINGS.get(average)
        if across is None:
            run.notes.append(
                Finding(code="comm.import.average_setting", figures={"average": average})
            )
        else:
            run.across_ranks = across
    version = _json_int(doc.get("nccl_version"))
    if version is not None:
        run.environment["nccl_version"] = version
    run.started_at, run.wall_s = _json_times(doc.get("start_time"), doc.get("end_time"))


def _average_setting(args: list[str]) -> int | None:
    """The value of -a / --average in argv, in any of getopt's spellings (the last wins)."""
    value: str | None = None
    for index, arg in enumerate(args):
        if arg in ("-a", "--average") and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith("--average="):
            value = arg.partition("=")[2]
        elif arg.startswith("-a") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
    return _json_int(value) if value is not None else None


def _json_times(start: Any, end: Any) -> tuple[str | None, float | None]:
    """util.cu's "%Y-%m-%d %H:%M:%S" in the machine's local time (no zone is recorded)."""

    def parse(value: Any) -> datetime | None:
        try:
            return datetime.strptime(str(value), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None

    began, ended = parse(start), parse(end)
    started_at = began.isoformat() if began else None
    wall_s = (ended - began).total_seconds() if began and ended else None
    return started_at, wall_s
