"""Bring torchscale's stored documents of an older schema version to the current ones, once.

torchscale reads the current version of each document kind (cell result, profile analysis,
validate report, comm run, max-batch search, forecast and its score, sweep state) and no other.
Every older version was written during the development before the first release; this one-off
converts such files in place:

    python tools/convert_results.py RESULTS_DIR [RESULTS_DIR ...]

How: the last torchscale that read every older version (commit LAST_READER, taken from this
repository's history by `git archive`) reads each file in a child interpreter and gives the
document at its versions; the changes made since (`SINCE`, over figures and codes) bring it to
today's; today's reader must then accept it, or the file is left as it was with why. Writes are
atomic; a file already at today's version is not touched. Needs a git checkout of torchscale
with its history (a shallow clone lacks LAST_READER).
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LAST_READER = "005ce8bc"  # main on 2026-11-29: reads cell 1-20, profile analysis 1-10, ...

# What the child runs under LAST_READER's package: every file it is handed, read by that
# version's own reader for its kind (a profile analysis beside its run's result.json), dumped
# as JSON at that version's schema; or why it could not be read.
CHILD = """
import json, sys
from pathlib import Path
from torchscale.contracts.schema import (
    cell_result, comm_result, forecast, max_batch, profile_analysis, sweep_state,
    validate_report,
)
from torchscale.offline.results import documents

VERSIONS = {
    "torchscale.cell": cell_result.RESULT_SCHEMA_VERSION,
    "torchscale.profile_analysis": profile_analysis.ANALYSIS_SCHEMA_VERSION,
    comm_result.COMM_KIND: comm_result.COMM_SCHEMA_VERSION,
    forecast.FORECAST_KIND: forecast.FORECAST_SCHEMA_VERSION,
    forecast.FORECAST_SCORE_KIND: forecast.FORECAST_SCORE_SCHEMA_VERSION,
    max_batch.MAX_BATCH_KIND: max_batch.MAX_BATCH_SCHEMA_VERSION,
    sweep_state.SWEEP_KIND: sweep_state.SCHEMA_VERSION,
    validate_report.VALIDATE_KIND: validate_report.SCHEMA_VERSION,
}
out = {}
for name in json.load(sys.stdin):
    path = Path(name)
    kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    if kind == "torchscale.profile_analysis":
        run = documents.read_cell(path.with_name("result.json"))
        read = documents.read_profile_analysis(path, run.doc)
    else:
        read = documents.READERS[kind](path)
    if read.doc is None:
        out[name] = {"problem": read.problem}
        continue
    # a model that reads an older shape as it is keeps the number it was written with
    out[name] = {"doc": {**read.doc.model_dump(mode="json"), "schema_version": VERSIONS[kind]}}
json.dump(out, sys.stdout)
"""

Document = dict[str, Any]

# Codes LAST_READER's upgrades wrote for what an older torchscale did not record: one code now,
# with the version the file was written in.
NOT_RECORDED = ("older.", "max_batch.v1_compiled", "profile.v1_attribution")
# Codes that held an older version's sentences no code was found for, or notes about how the
# reader upgraded a file: today's schemas hold neither, so they go (each a note, a warning,
# a problem or a reason beside figures that stay).
DROPPED = {
    "problem.stored",
    "profile.stored",
    "comm.stored",
    "forecast.stored",
    "max_batch.stored",
    "plan.infeasible",
    "warning.edge_steps_dropped",
    "profile.waits_included",
    "unavailable.sync_overhead_cross_check",
}
EDGE_NOTE = "first step of each window excluded: it followed the window's edge work"
# a diagnosis LAST_READER made at read time from an old result's point figures (no interval)
POINT_BASES = ("point figures (", "profiled steps after the measured windows (")
CELL = "torchscale.cell"
# the newest cell schema that timed each window's first step after its edge work
LAST_TIMED_EDGE = 15


def _percent(text: str) -> float:
    return float(text) / 100


def _is_finding(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("code"), str) and "figures" in value


def _recoded(value: Any, schema: int) -> Any:
    """`value` with every old-only code mapped or dropped, and no stored sentence left where
    a code stands (a str where a finding is expected has no code to be worded by)."""
    if _is_finding(value):
        if value["code"].startswith(NOT_RECORDED):
            return {"code": "unavailable.not_recorded", "figures": {"schema": schema}}
        return {**value, "figures": _recoded(value["figures"], schema)}
    if isinstance(value, dict):
        return {
            k: _recoded(v, schema)
            for k, v in value.items()
            if not (_is_finding(v) and v["code"] in DROPPED)
        }
    if isinstance(value, list):
        return [_recoded(v, schema) for v in value if not _dropped(v)]
    return value


def _dropped(item: Any) -> bool:
    """A finding of a DROPPED code, or a record made of one (a warning, a problem)."""
    found = item.get("finding") if isinstance(item, dict) and "finding" in item else item
    return _is_finding(found) and found["code"] in DROPPED


# Sentences an older version stored whose figures today's codes hold: (pattern, code, figure
# names with how each is read from its group).
PATTERNS: list[tuple[str, str, dict[str, Callable[[str], Any]]]] = [
    (
        r"not measurable: the energy counter moves in steps of up to ~(?P<step_s>[\d.]+) s, so "
        r"over (?P<windows>\d+) window\(s\) of (?P<window_s>[\d.]+) s in all it is uncertain by "
        r"~(?P<error>\d+)% \(kept at (?P<max>\d+)% or less\)",
        "unavailable.energy_counter_coarse",
        {"step_s": float, "windows": int, "window_s": float, "error": _percent, "max": _percent},
    ),
    (
        r"not measurable: the longest window is (?P<window_s>[\d.]+) s, where NVML averages .*; "
        r"a reading counts only (?P<floor_s>[\d.]+) s or more into",
        "unavailable.nvml_longest_window",
        {"window_s": float, "floor_s": float},
    ),
]
ONE_RANK = "world size 1: no other rank to wait for, no gradient communication to expose"


@functools.cache
def _said_by_words() -> dict[str, str]:
    """Today's words of every code said without figures -> its code (a sentence an older
    version stored that today's words give back exactly is that code)."""
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.wording import PHRASES, say

    words: dict[str, str] = {}
    for code in PHRASES:
        try:
            words.setdefault(say(Finding(code=code)), code)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            continue
    return words


def _coded(text: str, key: str, schema: int) -> dict[str, Any]:
    """The code an older version's sentence says, with its figures: today's words of a code
    without figures, a sentence of PATTERNS, else `unavailable.not_recorded`."""
    if text == ONE_RANK:
        code = "communication" if key == "comm_overhead" else "straggler"
        return {"code": f"unavailable.one_rank_{code}", "figures": {}}
    code = _said_by_words().get(text)
    if code is not None:
        return {"code": code, "figures": {}}
    for pattern, code, names in PATTERNS:
        found = re.match(pattern, text)
        if found is not None:
            figures = {name: read(found.group(name)) for name, read in names.items()}
            return {"code": code, "figures": figures}
    return {"code": "unavailable.not_recorded", "figures": {"schema": schema}}


def _words_recoded(value: Any, schema: int, key: str = "") -> Any:
    """`value` with each sentence an older version stored where a code stands today (an
    estimate's reason, a cross-check's detail, why a figure or a power limit is unknown)
    and that LAST_READER found no code for, as the code it says (`_coded`). Lists of notes
    lose such sentences; `unavailable` maps code theirs."""
    if isinstance(value, list):
        return [_words_recoded(v, schema) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for name, item in value.items():
        coded_slot = name in ("reason", "detail", "why") and _coded_slot(value)
        if isinstance(item, str) and (coded_slot or name in ("unavailable", "limit_unknown")):
            out[name] = _coded(item, name, schema)
        elif name == "unavailable" and isinstance(item, dict):
            out[name] = {
                k: _coded(v, k, schema) if isinstance(v, str) else _words_recoded(v, schema)
                for k, v in item.items()
                if v != EDGE_NOTE
            }
        elif name == "notes" and isinstance(item, list):
            out[name] = [_words_recoded(v, schema) for v in item if not isinstance(v, str)]
        elif name not in ("stored_summary", "stored_not_named"):
            out[name] = _words_recoded(item, schema)
    return out


def _coded_slot(owner: dict[str, Any]) -> bool:
    """Whether `owner`'s reason, detail or why is a code today: an estimate, a cross-check, a
    host-bound record, a finding's figures; a cell's error keeps its words (evidence)."""
    estimate = {"value", "low", "high", "n", "measurable"} <= owner.keys()
    check = {"agrees", "detail"} <= owner.keys()
    bound = {"gpu_busy_share", "host_bound", "method"} <= owner.keys()
    return estimate or check or bound or ("why" in owner and "root_cause_rank" not in owner)


def _sayable(value: Any, schema: int) -> Any:
    """`value` with every finding today's words cannot be made of (an older version stored it
    without a figure today's phrase needs) as `unavailable.not_recorded`: a stored code is
    worded when shown, and a phrase never guesses a figure."""
    from torchscale.contracts.finding import Finding
    from torchscale.contracts.wording import say

    if isinstance(value, list):
        return [_sayable(v, schema) for v in value]
    if not isinstance(value, dict):
        return value
    value = {k: _sayable(v, schema) for k, v in value.items()}
    if not _is_finding(value):
        return value
    try:
        say(Finding.model_validate(value))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return {"code": "unavailable.not_recorded", "figures": {"schema": schema}}
    return value


def _point_figures(diagnosis: Any) -> bool:
    return isinstance(diagnosis, dict) and (
        bool(diagnosis.get("rule")) or str(diagnosis.get("basis", "")).startswith(POINT_BASES)
    )


def _less(value: Any, *fields: str) -> Any:
    """A dict without `fields` (fields of LAST_READER's models that only an upgrade filled,
    never written since); anything else as it is."""
    return {k: v for k, v in value.items() if k not in fields} if isinstance(value, dict) else value


def _diagnosis(diagnosis: Any) -> Any:
    if not isinstance(diagnosis, dict):
        return diagnosis
    diagnosis = _less(diagnosis, "stored_caveat", "rule")
    diagnosis["straggler"] = _less(diagnosis.get("straggler"), "stored_summary", "stored_not_named")
    diagnosis["no_sync"] = _less(
        diagnosis.get("no_sync"), "slowest_compute_s", "slowest_compute_rank", "sync_overhead"
    )
    return diagnosis


def _cell_21(doc: Document, schema: int) -> Document:
    """Cell 20 -> 21: the old-only fields and codes gone; a diagnosis read from point figures
    gone, with why; a warning that kept only its words gone; a sleep probe's host-bound share
    keeps its verdict as a finding."""
    doc = dict(doc)
    if _point_figures(doc.get("diagnosis")):
        doc["diagnosis"] = None
        doc["unavailable"] = {
            **(doc.get("unavailable") or {}),
            "diagnosis": {"code": "unavailable.not_recorded", "figures": {"schema": schema}},
        }
    doc["diagnosis"] = _diagnosis(doc.get("diagnosis"))
    telemetry = doc.get("telemetry")
    if isinstance(telemetry, dict):
        ranks = [_less(r, "clock_basis") for r in telemetry.get("ranks") or []]
        doc["telemetry"] = {**telemetry, "ranks": ranks}
    doc["warnings"] = _warnings(doc)
    unavailable = dict(doc.get("unavailable") or {})
    unavailable.pop("sync_overhead", None)
    doc["unavailable"] = unavailable
    bound = doc.get("host_bound")
    probe = isinstance(bound, dict) and str(bound.get("method", "")).startswith("sleep probe")
    if probe and bound["host_bound"] and bound.get("verdict") is None:
        verdict = {"code": "host_bound.probe_launch_time", "figures": {}}
        verdict["figures"] = {"busy_share": bound["gpu_busy_share"]}
        bound = {**bound, "verdict": verdict}
    doc["host_bound"] = _less(bound, "note")
    return _cell_keys(doc, schema)


SYNC_VARIANCE = (
    r"High variance in gradient sync time: CV (?P<wait_cv>[\d.]+), (?P<share>\d+)% of the "
    r"step-time variance \(step CV (?P<step_cv>[\d.]+) > (?P<threshold>[\d.]+)\)"
)


def _warnings(doc: Document) -> list[Any]:
    """The cell's warnings as findings: one an older version kept only in words is read back
    where its words say its figures (gradient sync variance) or rebuilt from the telemetry
    the file stores by today's rule (a busy machine); else it goes."""
    kept, rebuild = [], False
    for warning in doc.get("warnings") or []:
        text = warning.get("text") or ""
        found = re.match(SYNC_VARIANCE, text)
        if warning.get("finding"):
            kept.append(_less(warning, "text"))
        elif found is not None:
            figures = {k: float(v) for k, v in found.groupdict().items()}
            figures["share"] /= 100
            finding = {"code": "warning.sync_variance", "figures": figures}
            kept.append({"kind": warning["kind"], "finding": finding})
        rebuild = rebuild or (warning.get("kind") == "busy machine" and not warning.get("finding"))
    if rebuild:
        kept += _busy_warnings(doc)
    return kept


def _busy_warnings(doc: Document) -> list[Any]:
    from torchscale.contracts.schema.cell_telemetry import Telemetry
    from torchscale.rank.telemetry.window_figures import busy_warnings

    telemetry = doc.get("telemetry")
    if not telemetry:
        return []
    hosts = Telemetry.model_validate(telemetry).hosts or []
    return [w.model_dump(mode="json") for w in busy_warnings(hosts) if w.kind == "busy machine"]


def _analysis_11(doc: Document, schema: int) -> Document:
    doc = _less(doc, "stored_mismatches", "before_diagnosis")
    doc["files"] = [_trace_file(f) for f in doc.get("files") or []]
    doc["diagnosis"] = _diagnosis(doc.get("diagnosis"))
    doc["notes"] = [n for n in doc.get("notes") or [] if not isinstance(n, str)]
    if len(doc.get("ranks") or []) == 1:  # one rank's parts are the diagnosis' own
        doc["ranks"][0]["parts"] = []
    return doc


def _validate_6(doc: Document, schema: int) -> Document:
    """Validate 5 -> 6: the words gone; a report that stored only its verdict's words (schema
    3 or older) gets its conclusion as today's rule makes it from its checks (run_checks)."""
    doc = _less(doc, "verdict")
    if doc.get("verdict_basis") is None:
        checks = doc.get("checks") or []
        failed = [c["title"] for c in checks if c["status"] == "FAIL"]
        warns = [c["title"] for c in checks if c["status"] == "WARN"]
        path = "GPU (NCCL)" if doc["device"] == "cuda" else "CPU (gloo)"
        doc["verdict_basis"] = (
            {"code": "validate.not_ready", "figures": {"failed": failed}}
            if failed
            else {
                "code": "validate.ready",
                "figures": {"quick": doc["quick"], "warns": warns, "path": path},
            }
        )
    doc["checks"] = [_less(c, "said", "said_fix") for c in doc.get("checks") or []]
    doc["measurements"] = [_peer_key(_less(m, "said")) for m in doc.get("measurements") or []]
    return doc


# a GPU's verdict against its node's peers, as the words an older version stored it in
PEER_KEYS = {
    "lags its peers": "lags_peers",
    "whole node below the SKU": "node_below_sku",
    "with its peers": "with_peers",
}


def _peer_key(measurement: dict[str, Any]) -> dict[str, Any]:
    data = measurement.get("data") or {}
    if data.get("peer_verdict") in PEER_KEYS:
        measurement["data"] = {**data, "peer_verdict": PEER_KEYS[data["peer_verdict"]]}
    return measurement


def _sweep_3(doc: Document, schema: int) -> Document:
    return {**doc, "planned": [_less(c, "skip_reason") for c in doc.get("planned") or []]}


# ---- a cell's error, peaks, host-bound method, settings: words an older version stored ----

# why a cell measured nothing, as an older version said it: the code it says, with the figures
# its words carry (each from the evidence stored beside it: the rank, the exception)
FAILURES: list[tuple[str, str, Callable[[re.Match[str]], dict[str, Any]]]] = [
    (
        r"needs (?P<gpus>\d+) GPUs; a node has (?P<have>\d+)",
        "plan.needs_gpus",
        lambda m: {"gpus": int(m["gpus"]), "have": int(m["have"]), "nodes": 1},
    ),
    (r"out of memory: (?P<exception>.+)", "failure.oom", lambda m: {}),
    (r"(?:rank (?P<rank>\d+)|a rank) raised (?P<exception>.+)", "failure.raised", lambda m: {}),
    (
        r"torchrun exited with (?P<returncode>-?\d+)",
        "failure.torchrun_exit",
        lambda m: {"returncode": int(m["returncode"])},
    ),
    (
        r"torchrun was killed by \w+ \(signal (?P<signum>\d+)\).*",
        "failure.torchrun_killed",
        lambda m: {"signum": int(m["signum"])},
    ),
    (
        r"(?:rank (?P<rank>\d+)|a rank) was killed by \w+ \(signal (?P<signum>\d+)\).*",
        "failure.killed",
        lambda m: {"signum": int(m["signum"])},
    ),
    (
        r"killed after the (?P<limit>[\d.e+]+) s cell timeout.*",
        "failure.timeout",
        lambda m: {"limit_s": float(m["limit"])},
    ),
]
# where a hung rank was, in an older version's words: kind, the frame, the caller
PLACE = re.compile(
    r"rank (?P<rank>\d+) (?:waiting in (?P<wait>\w+) \((?P<wfile>[^:)]+):(?P<wline>\d+)\)"
    r"|(?P<backward>in backward) \(autograd[^)]*\)"
    r"|in (?P<fn>\w+) \((?P<file>[^:)]+):(?P<line>\d+)\))"
    r"(?:, called from (?P<cfn>\w+) \((?P<cfile>[^:)]+):(?P<cline>\d+)\))?$"
)


def _why(error: dict[str, Any], schema: int) -> dict[str, Any]:
    """An older error's reason as its code (a skip's or own job's code where it kept one), and
    the evidence its words quote where the error did not store it beside them."""
    coded = error.get("skip") or error.get("cause")
    if coded:
        return coded
    reason = str(error.get("reason") or "").splitlines()[0] if error.get("reason") else ""
    code = _said_by_words().get(reason)
    if code is not None:
        return {"code": code, "figures": {}}
    for pattern, code, figures in FAILURES:
        found = re.fullmatch(pattern, reason)
        if found is not None:
            groups = found.groupdict()
            if groups.get("exception") and not error.get("exception"):
                error["exception"] = groups["exception"]
            if groups.get("rank") and error.get("root_cause_rank") is None:
                error["root_cause_rank"] = int(groups["rank"])
            return {"code": code, "figures": figures(found)}
    return {"code": "unavailable.not_recorded", "figures": {"schema": schema}}


def _frame(function: str | None, file: str | None, line: str | None) -> dict[str, Any] | None:
    return {"function": function, "file": file, "line": int(line)} if function else None


def _place(line: str) -> dict[str, Any] | None:
    """One of an older hang diagnosis' lines as where the rank was (None: another shape)."""
    m = PLACE.match(line)
    if m is None:
        return None
    kind = "collective" if m["wait"] else "backward" if m["backward"] else "code"
    frame = _frame(m["wait"], m["wfile"], m["wline"]) or _frame(m["fn"], m["file"], m["line"])
    caller = _frame(m["cfn"], m["cfile"], m["cline"])
    return {"rank": int(m["rank"]), "kind": kind, "frame": frame, "caller": caller}


def _error(error: Any, schema: int) -> Any:
    if not isinstance(error, dict):
        return error
    error = dict(error)
    why = _why(error, schema)
    places = [p for p in map(_place, error.get("diagnosis") or []) if p is not None]
    return {**_less(error, "reason", "skip", "cause", "diagnosis"), "why": why, "places": places}


SPEC_PEAK = re.compile(
    r"(?P<device>.+?)(?: \(as (?P<row>[^)]+)\))?: (?P<dtype>\w+) dense peak [\d.]+ TFLOP/s"
    r"(?: \((?P<why>.+)\))?"
)
TF32_UNITS = {"cuDNN convolutions": "conv", "cuBLAS matmuls": "matmul"}


def _spec_peak(basis: Any, schema: int) -> Any:
    """A spec-sheet peak's basis in words as peak.spec: the device, the table row, the dtype,
    the TF32 settings that decided it."""
    found = SPEC_PEAK.fullmatch(basis) if isinstance(basis, str) else None
    if found is None:
        return basis if not isinstance(basis, str) else _not_recorded(schema)
    tf32: list[dict[str, Any]] = []
    why = found["why"] or ""
    if why.startswith("no TF32: "):
        sources = why.removeprefix("no TF32: ").split(", ")
        units = ["conv", "matmul"][-len(sources) :]
        tf32 = [{"unit": u, "source": s, "on": False} for u, s in zip(units, sources, strict=True)]
    for said in why.split("; "):
        what, _, source = said.partition(" may use TF32: ")
        if what in TF32_UNITS:
            tf32.append({"unit": TF32_UNITS[what], "source": source, "on": True})
    figures = {"device": found["device"], "row": found["row"], "dtype": found["dtype"]}
    return {"code": "peak.spec", "figures": {**figures, "tf32": tf32}}


MEASURED = re.compile(
    r"measured by `torchscale validate` on (?P<host>\S+) at (?P<created_at>\S+): (?P<dtype>\w+) "
    r"[\d.]+ TFLOP/s \((?P<path>.+)\)"
)


def _measured_peak(basis: Any, schema: int) -> Any:
    """A measured peak's basis in words as peak.measured: each report's host, date, dtype,
    path."""
    if not isinstance(basis, str):
        return basis
    ranks = re.match(r"mean over (\d+) ranks: ", basis)
    said = basis[ranks.end() :].split("; ") if ranks else [basis]
    reports = [m.groupdict() for m in map(MEASURED.fullmatch, said) if m is not None]
    if len(reports) != len(said):
        return _not_recorded(schema)
    figures = {"ranks": int(ranks[1]) if ranks else 1, "reports": reports}
    return {"code": "peak.measured", "figures": figures}


def _not_recorded(schema: int) -> dict[str, Any]:
    return {"code": "unavailable.not_recorded", "figures": {"schema": schema}}


# a rank's settings an older version recorded in words (`environment`): each as its key, by
# how its constant text began; None drops one today's ranks no longer record
SETTINGS: dict[str, list[tuple[str, Any]]] = {
    "ddp_wrapper": [("none:", "none")],
    "loss": [
        ("the model's loss compiled", "compiled"),
        ("the model's token loss", "blockwise"),
        ("the model's loss, eager", "plain"),
    ],
    "bf16_activations": [("on:", "on"), ("not applicable", "no_residual_stream")],
    "compile_scope": [
        ("each of the", "per_unit"),
        ("the whole model compiled after fully_shard (the model has", "whole_model:no_blocks"),
        ("the whole model compiled after fully_shard (its FSDP units", "whole_model:nested_units"),
    ],
    "ddp_comm_hook": [("not called", "no_ddp_wrapper"), ("the plug-in's ddp_comm_hook", "timed")],
    "tp_plan": [
        ("per transformer block", "transformer_blocks"),
        ("hidden Linear layers", "hidden_pairs"),
        ("feed-forward layers split", "feed_forward_and_vocabulary"),
        ("the plug-in's tp_plan", "plugin"),
    ],
}
DROPPED_SETTINGS = ("flop_count_step", "channels_last_note", "dropout_rng")
BINDINGS: list[tuple[str, Callable[[re.Match[str]], dict[str, Any]]]] = [
    (
        r"local rank (\d+) bound to core\(s\) ([\d,]+)",
        lambda m: {"local_rank": int(m[1]), "cores": [int(c) for c in m[2].split(",")]},
    ),
    (
        r"not bound: (\d+) ranks share (\d+) core\(s\) on this node",
        lambda m: {"not_bound": "ranks_share_cores", "ranks": int(m[1]), "cores": int(m[2])},
    ),
    (
        r"not bound: this platform has no sched_setaffinity",
        lambda m: {"not_bound": "no_sched_setaffinity"},
    ),
    (
        r"not bound: sched_setaffinity failed: (.*)",
        lambda m: {"not_bound": "sched_setaffinity_failed", "error": m[1]},
    ),
]


def _setting(key: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if key == "fsdp_units":
        return int(value.split(" ", 1)[0])
    if key == "cpu_binding":
        for pattern, record in BINDINGS:
            found = re.fullmatch(pattern, value)
            if found is not None:
                return record(found)
    for start, word in SETTINGS.get(key, []):
        if value.startswith(start):
            sequence = key == "tp_plan" and "sequence parallel" in value
            return f"{word}_sequence_parallel" if sequence else word
    return value


def _settings(settings: Any) -> Any:
    if not isinstance(settings, dict):
        return settings
    return {
        k: _settings(v) if isinstance(v, dict) and k == "model_parallel" else _setting(k, v)
        for k, v in settings.items()
        if k not in DROPPED_SETTINGS
    }


HOST_BOUND_METHODS = {"CUDA trace": "cuda_trace", "flops at peak": "arithmetic"}


def _cell_keys(doc: Document, schema: int) -> Document:
    """A cell's words that are codes, keys or records today: its error's why and where its
    ranks were, its peaks' bases, its host-bound method, its rank settings; the sentences
    derivable from its figures (a tp cell's global batch, its profiled scope and method)
    gone."""
    doc["error"] = _error(doc.get("error"), schema)
    compute = doc.get("compute")
    if isinstance(compute, dict):
        compute["peak_basis"] = _spec_peak(compute.get("peak_basis"), schema)
        compute["measured_peak_basis"] = _measured_peak(compute.get("measured_peak_basis"), schema)
    bound = doc.get("host_bound")
    if isinstance(bound, dict):
        method = str(bound.get("method") or "")
        keys = [key for start, key in HOST_BOUND_METHODS.items() if method.startswith(start)]
        doc["host_bound"] = {**bound, "method": keys[0] if keys else None}
    parallel = doc.get("parallel")
    if isinstance(parallel, dict):
        parallel = _less(parallel, "global_batch_definition")
        parallel["profiled_comm"] = _less(parallel.get("profiled_comm"), "scope", "method")
        doc["parallel"] = parallel
    doc["environment"] = _settings(doc.get("environment"))
    return doc


RANK_SOURCES = {
    "file name": "file_name",
    "nsys process order": "process_order",
    "nvtx mark": "nvtx_mark",
}


def _trace_file(file: Any) -> Any:
    if not isinstance(file, dict):
        return file
    return {
        **file,
        "rank_source": RANK_SOURCES.get(file.get("rank_source"), file.get("rank_source")),
    }


def _max_batch_3(doc: Document, schema: int) -> Document:
    """Max-batch 3, its words gone: each probe's reason as its cell error's code (the
    evidence among its figures, as `CellError.finding` gives it), the peaks' scope (derived
    from the warm-up figures beside it)."""
    doc = _less(doc, "peak_scope")
    probes = []
    for probe in doc.get("probes") or []:
        reason = probe.get("reason")
        if isinstance(reason, str):
            error = {"reason": reason}
            why = _why(error, schema)
            evidence = {"rank": error.get("root_cause_rank"), "exception": error.get("exception")}
            shown = {k: v for k, v in evidence.items() if v is not None}
            probe = {**probe, "reason": {**why, "figures": {**shown, **why["figures"]}}}
        probes.append(probe)
    return {**doc, "probes": probes}


SINCE: dict[str, Callable[[Document, int], Document]] = {
    "torchscale.cell": _cell_21,
    "torchscale.profile_analysis": _analysis_11,
    "torchscale.validate": _validate_6,
    "torchscale.sweep": _sweep_3,
    "torchscale.max_batch": _max_batch_3,
}


def _current_versions() -> dict[str, int]:
    """Today's version of each kind, from today's schemas."""
    sys.path.insert(0, str(REPO))
    from torchscale.offline.results.documents import CURRENT_VERSIONS

    return dict(CURRENT_VERSIONS)


def _stored_kind(path: Path) -> tuple[str, int] | None:
    """(kind, version) of a torchscale document; None for any other file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not str(data.get("kind", "")).startswith("torchscale."):
        return None
    version = data.get("schema_version")
    return (data["kind"], version) if isinstance(version, int) else None


def _last_reader_tree(into: Path) -> Path:
    """LAST_READER's torchscale package, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", LAST_READER, "torchscale"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _read_by_last_reader(paths: list[Path], tree: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps([str(p) for p in paths]),
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"convert_results: the reader of {LAST_READER} failed: {tail[0]}")
    return dict(json.loads(done.stdout))


def _words_held(doc: Document) -> dict[str, bool]:
    """What LAST_READER kept as an older version's words in a diagnosis (no code found): its
    problems, its busy-machine caveat, why its straggler is not named."""
    diagnosis = doc.get("diagnosis") or {}
    verdict = diagnosis.get("straggler") or {}
    findings = diagnosis.get("findings") or []
    return {
        "problems": any((f.get("finding") or {}).get("code") == "problem.stored" for f in findings),
        "caveat": isinstance(diagnosis.get("stored_caveat"), str),
        "why_not": isinstance(verdict.get("stored_not_named"), str)
        and verdict.get("why_not") is None,
    }


def _minimum_filled(doc: Document) -> Document:
    """An unnamed verdict below the minimum effect that LAST_READER said without its figures
    (a result of schema 12 or older): the share, the minimum and the step from the verdict's
    and the diagnosis' own figures."""
    diagnosis = doc.get("diagnosis") or {}
    verdict = diagnosis.get("straggler") or {}
    why = verdict.get("why_not") or {}
    least, step = verdict.get("min_effect_s"), (diagnosis.get("step_s") or {}).get("value")
    if why.get("code") != "straggler.below_minimum" or "share" in why.get("figures", {}):
        return doc
    if least is not None and step:
        figures = {"share": least / step}
        verdict["why_not"] = {"code": "straggler.below_minimum", "figures": figures}
    return doc


ESTIMATE = {"value", "low", "high", "n", "measurable"}
# a cross-check's name -> its id (the name and how it is measured are words today)
CHECKS = {
    "paired per-step test": "paired",
    "CPU wait (host)": "cpu_wait",
    "held launches (DDP comm hook)": "held_launches",
    "arrival order (last arriver)": "arrival_order",
    "communication cost (no_sync windows)": "no_sync_comm",
    "traced steps against the measured windows": "inflation",
    "phase timers: step model": "timers_split",
    "phase timers: straggler": "timers_straggler",
    "traces: straggler": "traces_straggler",
}
PATTERNS_SAID = [  # how a cost fell over the steps, in words -> its record
    (r"every (?P<period>\d+)(?:st|nd|rd|th) step (?P<typical_s>[-+][\d.]+) ms", "periodic"),
    (r"every step", "every"),
    (r"most steps \((?P<steps>\d+) of (?P<of>\d+)\) (?P<typical_s>[-+][\d.]+) ms", "most"),
    (r"(?P<steps>\d+) of (?P<of>\d+) steps (?P<typical_s>[-+][\d.]+) ms", "sporadic"),
    (r"uneven over the steps", "uneven"),
]
RULES_SAID = [  # the rule that decided a kind, in words -> its code
    (r"its data phase has the largest significant gap", "data_phase"),
    (r"its (?P<phase>\w+) has the largest significant gap", "slow_phase"),
    (r"no phase is significant alone; its data phase holds most of the gap", "phases_data"),
    (r"no phase is significant alone; its compute phases hold most of the gap", "phases_compute"),
]


def _without_methods(value: Any) -> Any:
    """Every estimate without the words of its method (a constant of the code that took it,
    docs/methodology.md), at any depth (a figure may hold an estimate's dump)."""
    if isinstance(value, list):
        return [_without_methods(v) for v in value]
    if not isinstance(value, dict):
        return value
    estimate = value.keys() >= ESTIMATE and "method" in value
    return {k: _without_methods(v) for k, v in value.items() if not (estimate and k == "method")}


def _said_as(text: Any, table: list[tuple[str, str]]) -> tuple[str, dict[str, Any]] | None:
    for pattern, name in table:
        found = re.fullmatch(pattern, str(text or ""))
        if found is not None:
            figures = {k: v for k, v in found.groupdict().items() if v is not None}
            return name, figures
    return None


def _pattern(text: Any) -> dict[str, Any] | None:
    found = _said_as(text, PATTERNS_SAID)
    if found is None:
        return None
    shape, figures = found
    record: dict[str, Any] = {"shape": shape}
    for key, value in figures.items():
        record[key] = float(value) / 1e3 if key == "typical_s" else int(value)
    return record


def _verdict(verdict: Any, schema: int) -> Any:
    """A straggler verdict's words as codes: its test, the rule of its kind, its pattern,
    what withdrew it; its line (`said`) is made from its fields when shown."""
    if not isinstance(verdict, dict):
        return verdict
    unrecorded = {"code": "unavailable.not_recorded", "figures": {"schema": schema}}
    out = _less(verdict, "said", "withdrawn_by", "kind_basis")
    out["test"] = unrecorded  # every older test was the paired Wilcoxon test, not today's
    rule = _said_as(str(verdict.get("kind_basis") or "").split("; the host")[0], RULES_SAID)
    if verdict.get("kind_basis"):
        out["kind_rule"] = (
            {"code": f"straggler.rule.{rule[0]}", "figures": rule[1]} if rule else unrecorded
        )
    out["pattern"] = _pattern(verdict.get("pattern"))
    why = verdict.get("why_not") or {}
    if why.get("code") == "straggler.withdrawn" and isinstance(why["figures"].get("by"), str):
        said = why["figures"]["by"]
        by = [check for name, check in CHECKS.items() if name in said]
        by += ["others_wait"] if "others' wait for it" in said else []
        by += ["no_sync_windows"] if "no_sync" in said else []
        out["why_not"] = {"code": "straggler.withdrawn", "figures": {"by": by}}
    return out


def _check(check: Any) -> Any:
    if not isinstance(check, dict) or "name" not in check:
        return check
    name = check["name"]
    out = _less(check, "name", "method")
    out["check"] = "others_wait" if name.startswith("others' wait for it") else CHECKS[name]
    detail = out.get("detail")
    if not isinstance(detail, dict):  # an older version's words: coded later
        return out
    detail = dict(detail)
    if out["check"] == "others_wait" and isinstance(detail.get("figures"), dict):
        source = name.removeprefix("others' wait for it (").rstrip(")")
        detail["figures"] = {**detail["figures"], "source": source}
        out["detail"] = detail
    figures = detail.get("figures") or {}
    if detail.get("code") == "cross_check.verdicts_agree":
        detail["figures"] = _less(figures, "said")
    if detail.get("code") == "cross_check.verdicts_other_kind":
        detail["figures"] = _less(figures, "timers_basis", "traces_basis")
    out["detail"] = detail
    return out


def _problem(problem: Any) -> Any:
    """A problem's figures without the copies: the verdict (the diagnosis holds it), the
    busy record's method words, an MFU beside its own interval."""
    if not isinstance(problem, dict) or not isinstance(problem.get("finding"), dict):
        return problem
    figures = _less(problem["finding"].get("figures") or {}, "verdict", "method")
    if problem["finding"]["code"].startswith("problem.host_bound") and "verdict" in (
        problem["finding"].get("figures") or {}
    ):
        figures["verdict"] = problem["finding"]["figures"]["verdict"]
    if figures.get("mfu_interval") is not None:
        figures.pop("mfu", None)
    return {**problem, "finding": {**problem["finding"], "figures": figures}}


def _straggler_words(doc: Document, schema: int) -> Document:
    """The diagnosis' verdict, cross-checks, split and what-if without their words (their
    basis, methods, the verdict's line), as codes and figures."""
    diagnosis = doc.get("diagnosis")
    if not isinstance(diagnosis, dict):
        return doc
    diagnosis = _less(diagnosis, "basis")
    diagnosis["straggler"] = _verdict(diagnosis.get("straggler"), schema)
    diagnosis["cross_checks"] = [_check(c) for c in diagnosis.get("cross_checks") or []]
    diagnosis["findings"] = [_problem(p) for p in diagnosis.get("findings") or []]
    whatif = diagnosis.get("whatif")
    if isinstance(whatif, dict):
        late = "late collectives" in str(whatif.get("method", ""))
        whatif = _less(whatif, "method")
        diagnosis["whatif"] = {**whatif, "extra_work_s": None} if late else whatif
    return {**doc, "diagnosis": diagnosis}


def _brought_up(doc: Document, schema: int, current: int) -> Document:
    """LAST_READER's document (read from a file of `schema`) at today's version `current`."""
    doc = _straggler_words(_without_methods(_minimum_filled(doc)), schema)
    held = _words_held(doc)
    doc = _sayable(_words_recoded(_recoded(doc, schema), schema), schema)
    verdict = (doc.get("diagnosis") or {}).get("straggler")
    unrecorded = {"code": "unavailable.not_recorded", "figures": {"schema": schema}}
    if held["why_not"] and isinstance(verdict, dict):
        verdict["why_not"] = unrecorded
    doc["_rederive"] = held["problems"] or held["caveat"]
    step = SINCE.get(doc["kind"])
    if step is not None:
        doc = step(doc, schema)
    return {**doc, "schema_version": current}


def _rederived(doc: Document, run: Document | None) -> Document:
    """A diagnosis whose problems or busy-machine caveat an older version kept only in words,
    made again by today's rules from the figures the file stores (the step model's parts and
    straggler verdict; the host telemetry), the run's cell and telemetry for an analysis."""
    from torchscale.contracts.schema.cell_result import CellResult
    from torchscale.contracts.schema.diagnosis import Diagnosis
    from torchscale.offline.analysis.diagnosis import busy_caveat, with_caveat
    from torchscale.offline.analysis.diagnosis.findings import FindingInputs, rank_findings

    rederive = doc.pop("_rederive", False)
    if not rederive or doc.get("diagnosis") is None or (run is None and doc["kind"] != CELL):
        return doc
    diagnosis = Diagnosis.model_validate(doc["diagnosis"])
    cell = CellResult.model_validate(run if run is not None else doc)
    several = diagnosis.ranks > 1

    def share(name: str) -> Any:
        """A part's share; waits and transfer only where there are peers to wait for."""
        part = diagnosis.part(name)
        return part.share if part is not None and (several or name == "data") else None

    inputs = FindingInputs(
        cycle_us=float(diagnosis.step_s.value or 0.0) * 1e6,
        ranks=diagnosis.ranks,
        device_type=cell.cell.device,
        backend=cell.cell.backend,
        strategy=cell.cell.strategy,
        nodes=cell.cell.nodes,
        stall=share("wait_for_peers"),
        exposed_transfer=share("exposed_transfer"),
        data=share("data"),
        waits_known=several,
        verdict=diagnosis.straggler,
    )
    kept = list(diagnosis.findings)
    made = [f.stored() for f in rank_findings(inputs)]
    diagnosis = diagnosis.model_copy(update={"findings": kept + [f for f in made if f not in kept]})
    if diagnosis.busy is None:
        diagnosis = with_caveat(diagnosis, busy_caveat(cell.telemetry))
    return {**doc, "diagnosis": diagnosis.model_dump(mode="json")}


def _write_if_read_today(path: Path, doc: Document) -> str | None:
    """Write `doc` over `path` atomically where today's reader accepts it; else why not."""
    from torchscale.offline.results.documents import READERS

    temporary = path.with_name(f".{path.name}.converted")
    temporary.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    read = READERS[doc["kind"]](temporary)
    if read.doc is None:
        temporary.unlink()
        return read.problem
    temporary.replace(path)
    return None


def _steps_file(cell: Path) -> Path:
    """Where a sweep cell's steps are: steps/<id>.jsonl beside cells/."""
    return cell.parent.parent / "steps" / f"{cell.stem}.jsonl"


def _without_edge_steps(cell: Path) -> None:
    """A sweep cell that timed each window's first step (schema LAST_TIMED_EDGE or older) was
    read without it, its statistics recomputed so (LAST_READER's `edge_steps`; a profiled
    run's result.json was read as stored): its steps file loses that step too, so the steps
    table and the statistics stay one measurement."""
    steps = _steps_file(cell)
    if not steps.is_file():
        return
    kept = [
        line
        for line in steps.read_text(encoding="utf-8").splitlines()
        if line.strip() and json.loads(line).get("step") != 0
    ]
    temporary = steps.with_name(f".{steps.name}.converted")
    temporary.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    temporary.replace(steps)


def convert(folders: list[Path]) -> int:
    """Convert every older document under `folders`; the number of files left as they were."""
    current = _current_versions()
    old = {
        path: found
        for folder in folders
        for path in sorted(folder.resolve().rglob("*.json"))
        if (found := _stored_kind(path)) is not None and found[1] != current.get(found[0])
    }
    if not old:
        print("convert_results: every torchscale document is at today's version")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        read = _read_by_last_reader(list(old), _last_reader_tree(Path(scratch)))
    left = 0
    runs: dict[Path, Document] = {}
    for path, (kind, schema) in sorted(old.items(), key=lambda item: item[1][0] != CELL):
        got = read[str(path)]
        problem = got.get("problem")
        if problem is None:
            doc = _brought_up(got["doc"], schema, current[kind])
            doc = _rederived(doc, runs.get(path.with_name("result.json")))
            runs[path] = doc
            problem = _write_if_read_today(path, doc)
        if problem is not None:
            left += 1
            print(f"{path}: left as it was: {problem}", file=sys.stderr)
            continue
        if kind == CELL and schema <= LAST_TIMED_EDGE and path.parent.name == "cells":
            _without_edge_steps(path)
        print(f"{path}: converted from schema {schema}")
    return left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    return 1 if convert(args.folders) else 0


if __name__ == "__main__":
    raise SystemExit(main())
