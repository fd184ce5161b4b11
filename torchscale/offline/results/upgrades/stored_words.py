"""Version 19 -> 20 (the cell's own words): a warning of schema 16-19 was stored as a sentence;
20 stores its code and figures (`CellWarning.finding`, worded by
contracts/wording/cell_warnings.py), and so a reason of `unavailable` whose words are a code's
(contracts/wording/unavailable.py); the straggler verdict's summary copied into
`unavailable["straggler"]` is dropped (the verdict says it). Each sentence those versions
wrote is recognised here and turned back into its figures; a warning whose figures live
elsewhere in the result (the busy machine, a shared GPU, throttled clocks) is rebuilt from
them. Words not recognised (an older version's) stay as stored. The diagnosis' copies
(`cost_pct`, `host_bound`, `disagreement`) are dropped where the schema reads them
(contracts/schema/cell_result.py), as a profile analysis embeds the same diagnosis.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from torchscale.contracts.wording.unavailable import SAID
from torchscale.offline.results.upgrades.cell_reasons import coded_reasons
from torchscale.offline.results.upgrades.cross_check_words import coded_cross_checks
from torchscale.offline.results.upgrades.estimate_words import coded_estimates
from torchscale.offline.results.upgrades.host_load_words import coded_host_loads
from torchscale.offline.results.upgrades.power_limit_words import coded_power_limits
from torchscale.offline.results.upgrades.profile_note_words import coded_profile_notes
from torchscale.offline.results.upgrades.stored_problems import coded_diagnosis as coded_problems
from torchscale.offline.results.upgrades.telemetry_words import coded_telemetry
from torchscale.offline.results.upgrades.verdict_words import coded_diagnosis

Figures = dict[str, Any]


def _ranks(text: str) -> list[int]:
    return [int(rank) for rank in text.split(",")]


# (code, the sentence as versions 16-19 wrote it, its figures from the match)
SENTENCES: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], Figures]], ...] = (
    (
        "warning.step_time_cv",
        re.compile(r"High variance in step time: CV (\S+) > (\S+)"),
        lambda m: {"cv": float(m[1]), "threshold": float(m[2])},
    ),
    (
        "warning.sync_variance",
        re.compile(
            r"High variance in gradient sync time: CV (\S+), (?:(\d+) % of|most of) the "
            r"step-time variance \(step CV (\S+) > (\S+)\): the network or waiting for peers, "
            r"not compute"
        ),
        lambda m: {
            "wait_cv": float(m[1]),
            "share": int(m[2]) / 100 if m[2] is not None else None,
            "step_cv": float(m[3]),
            "threshold": float(m[4]),
        },
    ),
    (
        "warning.injected_delay",
        re.compile(
            r"Injected delay \(--inject-delay (\d+):(\w+):([^)]+)\): rank \d+ sleeps \S+ ms in "
            r"its \w+ phase every step: the straggler and load imbalance it causes are artificial"
        ),
        lambda m: {"rank": int(m[1]), "phase": m[2], "ms": float(m[3])},
    ),
    (
        "warning.compiled_in_windows",
        re.compile(
            r"torch\.compile (re)?compiled inside the measured windows \((\d+) frame\(s\), (\S+) "
            r"s of compiling(?:, (\d+) graph break\(s\))? on rank\(s\) ([\d, ]+)\)"
        ),
        lambda m: {
            "frames": int(m[2]),
            "compile_s": float(m[3]),
            "graph_breaks": int(m[4] or 0),
            "ranks": _ranks(m[5]),
            "first_compile": m[1] is None,
        },
    ),
    (
        "warning.tf32_off",
        re.compile(
            r"fp32 matmuls with TF32 off \(torch's default\): slower than TF32 on this GPU "
            r"\(dense peak (\S+) against (\S+) TFLOP/s\)"
        ),
        lambda m: {"fp32_tflops": float(m[1]), "tf32_tflops": float(m[2])},
    ),
    (
        "warning.cpu_amp",
        re.compile(r"amp \(fp16 autocast\) on CPU is slow and not representative of GPUs"),
        lambda m: {},
    ),
    (
        "warning.cpu_oversubscribed",
        re.compile(
            r"(\d+) CPU ranks on (\d+) core\(s\): oversubscribed, timings include contention"
        ),
        lambda m: {"ranks": int(m[1]), "cores": int(m[2])},
    ),
    (
        "warning.compile_off_small_model",
        re.compile(r"training\.compile off: ([\d,]+) parameters, under (\d+) M, so its step"),
        lambda m: {"parameters": int(m[1].replace(",", "")), "min_parameters": int(m[2]) * 10**6},
    ),
    (
        "warning.slurm_few_cpus",
        re.compile(r"the Slurm step has (\d+) CPU\(s\) on (.+) for (\d+) rank\(s\): ranks,"),
        lambda m: {"cpus": int(m[1]), "where": m[2], "ranks": int(m[3])},
    ),
    (
        "warning.killed_after_result",
        re.compile(
            r"the ranks had not exited (\S+) s after the result was written: killed in their "
            r"shutdown; measurement kept: see (.+)"
        ),
        lambda m: {"grace_s": float(m[1]), "log_dir": m[2]},
    ),
    (
        "warning.timed_out_after_result",
        re.compile(
            r"the ranks had not exited (\S+) s after the launch \(the cell timeout\) although "
            r"the result was written: killed in their shutdown; measurement kept: see (.+)"
        ),
        lambda m: {"timeout_s": float(m[1]), "log_dir": m[2]},
    ),
    (
        "warning.exit_after_result",
        re.compile(
            r"torchrun exited with (-?\d+) after the result was written \(shutdown failure; "
            r"measurement kept\): see (.+)"
        ),
        lambda m: {"returncode": int(m[1]), "log_dir": m[2]},
    ),
)


def _busy_hosts(data: dict[str, Any]) -> Figures | None:
    hosts = (data.get("telemetry") or {}).get("hosts") or []
    busy = [
        {**h["finding"], "host": h["host"], "load_avg_max": (h.get("load_avg_1m") or {}).get("max")}
        for h in hosts
        if h.get("busy") and h.get("finding")
    ]
    return {"hosts": busy} if busy else None


def _shared_gpus(data: dict[str, Any]) -> Figures | None:
    hosts = (data.get("telemetry") or {}).get("hosts") or []
    shared = [
        {
            "host": h["host"],
            "processes": h["other_gpu_processes"],
            "pids": h.get("other_gpu_pids", []),
        }
        for h in hosts
        if h.get("other_gpu_processes")
    ]
    return {"hosts": shared} if shared else None


def _throttled_ranks(data: dict[str, Any]) -> Figures | None:
    ranks = (data.get("telemetry") or {}).get("ranks") or []
    hot = [
        {"rank": r["rank"], "gpu": r.get("gpu_name") or r.get("device")}
        for r in ranks
        if r.get("clock_verdict") == "throttled"
    ]
    return {"ranks": hot} if hot else None


# how versions up to 19 began the throttling warning
THROTTLED = "GPU clocks throttled during the measured windows: "
# warnings whose figures are the result's own telemetry: rebuilt from it, never parsed
REBUILT: tuple[tuple[str, str, Callable[[dict[str, Any]], Figures | None]], ...] = (
    ("busy machine: ", "warning.busy_machine", _busy_hosts),
    ("GPU shared: ", "warning.gpu_shared", _shared_gpus),
    (THROTTLED, "warning.throttled", _throttled_ranks),
)
EDGE_WARNING = (
    "step times read without each window's first step (this result timed the step right "
    "after its window's edge work, which ran slow); its throughput, the windows' wall time, "
    "still includes it"
)


def warning_finding(text: str, data: dict[str, Any]) -> Figures | None:
    """The finding (code and figures) a stored warning's words say, or None where they are
    not a sentence versions 16-19 wrote."""
    if text == EDGE_WARNING:
        return {"code": "warning.edge_steps_dropped", "figures": {}}
    for start, code, rebuild in REBUILT:
        if text.startswith(start) and (figures := rebuild(data)) is not None:
            return {"code": code, "figures": figures}
    for code, sentence, figures_of in SENTENCES:
        if (match := sentence.match(text)) is not None:
            return {"code": code, "figures": figures_of(match)}
    return None


def coded_warnings(data: dict[str, Any]) -> list[Any]:
    """The result's warnings with a finding for each sentence recognised."""
    out = []
    for warning in data.get("warnings") or []:
        text = warning.get("text") if isinstance(warning, dict) else None
        found = warning_finding(text, data) if isinstance(text, str) else None
        out.append({"kind": warning["kind"], "finding": found} if found else warning)
    return out


# a reason of `unavailable` stored in the words its code says today (figure-less codes)
REASONS: dict[str, str] = {words: code for code, words in SAID.items()}


def coded_unavailable(data: dict[str, Any]) -> Any:
    """The result's `unavailable` with a code for each reason whose words are a code's, and
    without the copy of a straggler verdict's summary (the verdict says it, once)."""
    unavailable = data.get("unavailable")
    if not isinstance(unavailable, dict):
        return unavailable
    diagnosis = data.get("diagnosis") or {}
    verdict = diagnosis.get("straggler") if isinstance(diagnosis, dict) else None
    summary = verdict.get("summary") if isinstance(verdict, dict) else None
    out: dict[str, Any] = {}
    for metric, reason in unavailable.items():
        if metric == "straggler" and summary is not None and reason == summary:
            continue
        code = REASONS.get(reason) if isinstance(reason, str) else None
        out[metric] = {"code": code, "figures": {}} if code is not None else reason
    return out


def _without_mfu(intervals: Any) -> Any:
    """The headline intervals less MFU's, which only scaled the throughput's (its interval is
    derived where it is read: `uncertainty.mfu_estimate`)."""
    if not isinstance(intervals, dict):
        return intervals
    return {k: v for k, v in intervals.items() if k not in ("mfu", "mfu_measured")}


def upgrade_v19(data: dict[str, Any]) -> dict[str, Any]:
    """Version 19 -> 20: stored sentences become codes with their figures."""
    data = {**data, "diagnosis": coded_cross_checks(data.get("diagnosis"))}
    data = coded_estimates(data)
    warnings = coded_warnings(data)
    return coded_reasons(
        {
            **coded_telemetry(coded_host_loads(coded_power_limits(data))),
            "intervals": _without_mfu(data.get("intervals")),
            "warnings": warnings,
            "unavailable": coded_unavailable(data),
            "diagnosis": coded_diagnosis(coded_problems(data.get("diagnosis"))),
            "profile": coded_profile_notes(data.get("profile")),
            "schema_version": 20,
        }
    )
