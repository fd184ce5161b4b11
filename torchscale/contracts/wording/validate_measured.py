"""Words for a validate report's measured levels and its verdict:
`--level perf` (`perf.*`, `matmul.*`, `bandwidth.*`), `--level burn` (`burn.*`), the smoke test
(`smoke.*`), and validate's own verdict, failures and fixes (`ValidateReport.verdict_basis`,
`checks[]`: `validate.*`), with the lines its measurements print."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import CheckResult, Measurement
from torchscale.contracts.wording import Phrases, render, say
from torchscale.contracts.wording.cell_telemetry import limit_why
from torchscale.contracts.wording.spell import as_set, readable_unit, sig, tenth_seconds, with_unit

# Words for `torchscale validate`: its checks' findings (codes and figures stored in the
# validate report), the figures its tables and the measured peak spell, and the hints that say
# how to fix a check.

F = Mapping[str, Any]


def _said(findings: Sequence[Finding]) -> str:
    """The findings in words, joined."""
    from torchscale.contracts import wording  # the joined phrases, made after this module

    return "; ".join(wording.say(f) for f in findings)


def detail(item: CheckResult | Measurement) -> str:
    """What a check found, or a measurement's evidence, in words."""
    if isinstance(item, CheckResult):
        return _said(item.findings)
    return _said([item.finding] if item.finding else [])


def hint(check: CheckResult) -> str:
    """How to fix a check, in words (empty on PASS)."""
    return _said(check.fix)


def unavailable(row: Measurement) -> str | None:
    """Why a measurement has no value, in words; None where it has one."""
    return (detail(row) or "not measured") if row.value is None else None


def _all(f: F) -> str:
    """Several findings that are one piece of evidence, in a row (each by its own phrase)."""
    from torchscale.contracts import wording  # the joined phrases, made after this module

    return "; ".join(wording.say(Finding.model_validate(one)) for one in f["findings"])


def all_of(findings: Sequence[Finding]) -> dict[str, Any]:
    """The figures of 'validate.all' for `findings` (Finding models)."""
    return {"findings": [one.model_dump() for one in findings]}


def _spread(values: Sequence[float], unit: str) -> str:
    low, high = min(values), max(values)
    if len(values) == 1:
        return with_unit(sig(low, 4), unit)
    return f"{sig(low, 4)} to {with_unit(sig(high, 4), unit)} over {len(values)} ranks"


def phase_words(
    title: str,
    values: Sequence[float] = (),
    unit: str = "",
    probes: int | None = None,
    elapsed_s: float | None = None,
    why: Any = None,
) -> str:
    """A finished perf phase in a line: its figure over the ranks (a matmul's with its
    probes and time), or why it has none (a finding)."""
    if not values:
        from torchscale.contracts import wording  # the joined phrases, made after this module

        return f"perf: {title}: not measured: {wording.say(why) if why else 'no figure'}"
    text = f"perf: {title}: {_spread(values, unit)}"
    if probes is None:
        return text
    took = f", {tenth_seconds(elapsed_s)}" if elapsed_s is not None else ""
    return text + f" ({probes} probe{'' if probes == 1 else 's'}{took})"


# Words for the conclusions of `torchscale validate` not found in its checks' modules: a node
# where torch sees no GPU, and a run stopped before it was judged (`ValidateReport.verdict_basis`).


def _reason(f: F) -> list[str]:
    """Why torch sees no GPU, most fundamental first."""
    if f.get("torch_error") is not None:
        return [f"torch cannot be imported ({f['torch_error']})"]
    reasons = []
    if f.get("cpu_only_torch"):
        reasons.append(f"torch {f['cpu_only_torch']} is a CPU-only build")
    if f.get("nvml_error") is not None:
        reasons.append(f"NVML: {f['nvml_error']}")
    elif f.get("driver_lists_none"):
        reasons.append("the NVIDIA driver lists no GPU")
    return reasons or ["torch sees no CUDA device (check CUDA_VISIBLE_DEVICES)"]


def _no_gpu(f: F) -> str:
    text = "GPU training is impossible on this node: " + "; ".join(_reason(f)) + "."
    if f["cpu_works"]:
        return text + (
            " The CPU path works (gloo smoke test passed): `torchscale validate "
            "--device cpu` checks it, and `device: cpu` in a config runs each rank as "
            "a CPU process with gloo."
        )
    return text + (
        " The CPU path (gloo) may still work: check it with `torchscale validate --device cpu`."
    )


# Words for the findings of `validate --level perf`: a measured figure against its SKU's
# expected one (orchestration/validate/reference.py judges; figures: ratio, expected, kind
# ('healthy': this search on a healthy GPU of the SKU, with its runs; 'spec': the sheet),
# pass_at, fail_below).


def _against(f: Mapping[str, Any]) -> str:
    if f.get("kind") == "healthy":
        runs = f.get("runs") or 0
        counted = f"{runs} run" if runs == 1 else f"{runs} runs"
        return f"this search's {f['expected']:g} on a healthy GPU of this SKU ({counted})"
    return f"the spec-sheet {f['expected']:g}"


def _judged(f: Mapping[str, Any]) -> str:
    return f"{f['ratio'] * 100:.0f} % of {_against(f)}"


def _bars(f: Mapping[str, Any]) -> str:
    return (
        f"{_judged(f)} (PASS from {f['pass_at'] * 100:.0f} %, "
        f"FAIL below {f['fail_below'] * 100:.0f} %)"
    )


def _inner(f: Mapping[str, Any]) -> str:
    """The words of the finding a summary carries (its worst GPU's evidence)."""
    from torchscale.contracts import wording  # the joined phrases, made after this module
    from torchscale.contracts.finding import Finding

    return wording.say(Finding.model_validate(f["finding"])) if f.get("finding") else ""


def _where(f: Mapping[str, Any]) -> str:
    return f"{f['units']} {f['gpu']}" if f.get("gpu") is not None else str(f.get("title"))


def _watts(values: list[float]) -> str:
    low, high = min(values), max(values)
    return as_set(low, "W") if low == high else f"{as_set(low)}-{as_set(high, 'W')}"


def power_words(f: Mapping[str, Any]) -> str:
    """A group of GPUs' power limits (contracts/power_limit.py `node_power_cap`'s figures)."""
    if "unread" in f:
        if not f["of"]:
            return "power limit not read"
        return (
            f"power limit unknown on {f['unread']} of {f['of']} GPUs ({limit_why(f.get('why'))})"
            ": a power cap can be neither seen nor ruled out"
        )
    enforced, default = f["enforced_w"], f["default_w"]
    if f["capped_gpus"] == f["of"]:
        return f"power limit {_watts(enforced)} of {_watts(default)} default: the node is capped"
    if not f["capped_gpus"]:
        return f"power limit {_watts(enforced)}, its default: not a power cap"
    return (
        f"{f['capped_gpus']} of {f['of']} GPUs capped below their default (limits "
        f"{_watts(enforced)}, median {statistics.median(enforced):g} W; default "
        f"{_watts(default)}): not the whole node"
    )


def _sku(f: Mapping[str, Any]) -> str:
    """The SKU verdict the peers' finding carries, in its own words."""
    sku = f.get("sku")
    phrase = PHRASES.get(sku["code"]) if sku else None
    return render(phrase, sku["figures"]) if phrase is not None and sku is not None else ""


def lags_peers(f: Mapping[str, Any]) -> str:
    sku = _sku(f)
    return (
        f"{f['peer_ratio'] * 100:.0f} % of the median of the node's other {f['peers']} GPUs "
        f"({f['peer_median']:.3g} {f['unit']}): this GPU lags its peers"
        + (f"; {sku}" if sku else "")
    )


def node_below_sku(f: Mapping[str, Any]) -> str:
    healthy = "; per GPU it is healthy" if f.get("power_capped") else ""
    return (
        f"{_sku(f)}; the whole node is below the SKU (its median {f['node_median']:.3g} "
        f"{f['unit']}, {f['node_ratio'] * 100:.0f} % of the SKU's {f['expected']:g}) and this "
        f"GPU is with its peers: not a per-GPU fault; {power_words(f['power'])}{healthy}"
    )


# Words for `validate --level burn`'s findings (orchestration/validate/burn_in.py judges; the
# rules are docs/validate.md's 'Burn-in').


def _fell(f: F) -> str:
    """TFLOP/s fell, with what the telemetry says about it."""
    parts = []
    if f.get("clock_from_mhz") is not None:
        fell = (1 - f["clock_to_mhz"] / f["clock_from_mhz"]) * 100
        parts.append(
            f"SM clock fell {fell:.0f} % ({f['clock_from_mhz']:.0f} to {f['clock_to_mhz']:.0f} MHz)"
        )
    if f.get("max_temperature_c") is not None:
        parts.append(f"up to {f['max_temperature_c']:.0f} °C")
    if f.get("slowdown"):
        parts.append("slowdown: " + ", ".join(f["slowdown"]))
    why = f" ({'; '.join(parts)})" if parts else ""
    return f"TFLOP/s fell {f['drop'] * 100:.0f} % after {f['after_s']:.0f} s{why}"


# Words for the rank side of `validate --level perf` (rank/programs/matmul_peak.py,
# bandwidth.py): why a dtype or a bandwidth was not measured, why a figure has no spec-sheet
# bar, why a figure is impossible, and how the matmul search ended.


def timer_read(seconds: float) -> str:
    """A probe's error when its timer read no time (quoted in the probe as its error)."""
    return render("timer read {seconds!r} s for the loop", {"seconds": seconds})


def _capability(f: F) -> str:
    return str(tuple(f["capability"]))


def _unchecked(f: F) -> str:
    note = f.get("note")
    return "not checked against a spec sheet: " + (
        say(Finding.model_validate(note)) if note else ""
    )


# Words for validate's smoke test (orchestration/validate/smoke.py judges one torchrun of
# real ranks: an all_reduce and an all_gather whose results are checked).


def _passed(f: F) -> str:
    world = f["world"]
    bandwidth = "1 rank: no bus bandwidth" if world == 1 else f"busbw {f['busbw_gbps']:.2f} GB/s"
    return (
        f"all_reduce of {f['bytes'] // 2**20} MiB correct on {world} rank(s): "
        f"{f['seconds_per_all_reduce'] * 1e3:.2f} ms each, {bandwidth}; all_gather correct; "
        f"{f['wall_s']:.1f} s wall"
    )


_LOGS = "full log: {log} (each rank's output under {ranks_dir})"


def _ready(f: F) -> str:
    text = f"This node is ready for {f['path']} distributed training."
    return text + _tail(f)


def _ready_one_gpu(f: F) -> str:
    text = (
        f"This GPU is ready for single-GPU training; distributed training across GPUs is not "
        f"proven: one GPU, so not checked: {', '.join(f['unchecked'])}."
    )
    return text + _tail(f)


def _tail(f: F) -> str:
    text = " (--quick: the live smoke test was not run.)" if f.get("quick") else ""
    if f.get("warns"):
        text += " Worth a look: " + ", ".join(f["warns"]) + "."
    return text


PHRASES: Phrases = {
    "validate.all": _all,
    "validate.no_gpu": _no_gpu,
    "validate.not_judged": (
        "Not judged: {why}, before every figure was measured (the ones measured are below)."
    ),
    "validate.ready": _ready,
    "validate.ready_one_gpu": _ready_one_gpu,
    "validate.not_ready": "This node is NOT ready for distributed training: {failed:list} failed.",
    "validate.crashed": "{what}: {error} ({file}:{line})",
    "validate.fix_report_bug": lambda f: (
        "please report this as a torchscale bug"
        + (", with `torchscale validate --json`" if f.get("with_json") else "")
    ),
    "validate.smoke_not_run": "could not run: {error}",
    "validate.stopped": lambda f: (
        f"{f['why']}; kept: {', '.join(f['phases']) or 'every phase'} in {f['folder']}"
    ),
    "validate.fix_run_again": "run it again for every figure",
    "validate.needs_torch": "needs torch",
    "validate.perf_no_gpu": "needs a CUDA GPU, and torch sees none",
    "validate.fix_perf_cpu": (
        "`torchscale validate --device cpu --level perf` measures the CPU path"
    ),
    "validate.wrote_nothing": "the {ranks} ranks wrote nothing: {why}",
    "validate.fix_rank_logs": "each rank's log is under {where}",
    "perf.pass": _judged,
    "perf.warn": _bars,
    "perf.fail": _bars,
    "perf.above_spec": lambda f: (
        f"{_judged(f)}: above the spec sheet, a measurement bug, not a fast GPU"
    ),
    "perf.no_reference": "no reference for this device: the measured value alone",
    "perf.not_measured": "not measured",
    "perf.lags_peers": lags_peers,
    "perf.node_below_sku": node_below_sku,
    "perf.fix_power_unknown": "whole node below the SKU: power cap? check nvidia-smi -q -d POWER",
    "perf.fix_capped": (
        "the node's GPUs run under a power limit below their default (nvidia-smi -q -d POWER): "
        "its matmuls stay below the SKU's; raise the limit (nvidia-smi -pl) where the provider "
        "allows"
    ),
    "perf.fix_uncapped": (
        "whole node below the SKU at its default power limit: check its clocks and slowdown "
        "reasons (nvidia-smi -q -d CLOCK,PERFORMANCE: application clocks, thermal or power "
        "brake) and its cooling"
    ),
    "perf.fix_lagging": (
        "one GPU below its peers: check its clocks, power and temperature (nvidia-smi -q -d "
        "PERFORMANCE,POWER,TEMPERATURE), other processes on it and its ECC errors"
    ),
    "perf.fix_fail": "see docs/validate.md ('How to read a FAIL') for what to check on this node",
    "perf.fix_warn": "below what this SKU usually reaches: compare with its peers (fleet view)",
    "perf.busbw_not_measured": lambda f: (
        "; ".join(f["reasons"]) or f.get("error") or f"{f['op']} was not measured ({f['status']})"
    ),
    "perf.busbw_too_few_gpus": "needs 2 or more GPUs: this node has {count} (NCCL links no GPU)",
    "perf.busbw_not_run": "the collective sweep could not run: {error}",
    "perf.wrong_sums": "{wrong} wrong element(s) in the checked results ({comm_run})",
    "perf.one_figure": lambda f: f"{readable_unit(f['value'], f['unit'])}: {_inner(f)}",
    "perf.spread": lambda f: (
        f"{f['count']} {f['units']}s, {readable_unit(f['low'], f['unit'])} to "
        f"{readable_unit(f['high'], f['unit'])} (median {readable_unit(f['median'], f['unit'])}); "
        f"{_where(f)}: {_inner(f)}"
    ),
    "burn.result_changed": (
        "its seeded result changed from its own first one at interval {interval}: silent data "
        "corruption"
    ),
    "burn.result_differs": (
        "its seeded result differs from its {votes} peers' at interval {interval}: silent data "
        "corruption"
    ),
    "burn.no_majority": (
        "the {ranks} ranks' seeded results disagree at interval {interval} with no majority: one "
        "of them is wrong, which cannot be told"
    ),
    "burn.counter_rose": "NVML {counter} rose by {by} during the burn",
    "burn.remap_pending": "a row remap is pending: the GPU needs a reset to apply it",
    "burn.no_interval": "no interval completed: the device did no measurable work",
    "burn.cpu_not_judged": lambda f: (
        f"{f['tflops'] * 1e3:.3g} GFLOP/s median over {f['intervals']} intervals; seeded "
        "results agree (CPU ranks share cores with the machine: throughput is not judged)"
    ),
    "burn.fell": _fell,
    "burn.below_peers": "{gap:share0} below its peers' median {peer_median:.0f} TFLOP/s",
    "burn.steady": "{tflops:.0f} TFLOP/s steady over {intervals} intervals; seeded results agree",
    "burn.copy_median": "median over the intervals",
    "burn.results_agree": "{fingerprints} seeded results agree",
    "burn.see_docs": "see docs/validate.md ('Burn-in') for what the evidence means",
    "matmul.unknown_dtype": "unknown dtype '{dtype}' (known: {known:list})",
    "matmul.cpu_no_tf32": (
        "TF32 is a tensor-core mode of NVIDIA GPUs (Ampere and later); CPUs have none"
    ),
    "matmul.cpu_no_fp8": (
        "fp8 matmuls are measured only on GPUs with fp8 tensor cores (compute capability >= "
        "8.9); a CPU has no fp8 matmul units to measure"
    ),
    "matmul.device_type": "device type '{type}' is not supported (cpu or cuda)",
    "matmul.rocm_tf32": "TF32 (AMD: XF32) is not measured on ROCm yet",
    "matmul.no_tf32": lambda f: (
        f"compute capability {_capability(f)} has no TF32 tensor cores (needs 8.0)"
    ),
    "matmul.no_bf16": "{device} does not support bf16 matmuls",
    "matmul.rocm_fp8": "fp8 (e4m3fnuz on MI300) is not measured on ROCm yet",
    "matmul.torch_no_fp8": "torch {torch} has no torch._scaled_mm / float8_e4m3fn",
    "matmul.no_fp8": lambda f: (
        f"compute capability {_capability(f)} has no fp8 tensor cores (needs 8.9)"
    ),
    "matmul.fp8_failed": "torch._scaled_mm failed on {device}: {error}",
    "matmul.cpu_no_spec": "no spec-sheet peak for CPUs (contracts/gpu_peaks.py lists GPUs)",
    "matmul.mig_no_spec": "'{name}' is a MIG slice: its share of the GPU's peak is unknown",
    "matmul.no_table_entry": "no peak FLOP/s table entry for '{name}'",
    "matmul.no_dtype_peak": "no {dtype} peak known for {name} (read as {model})",
    "matmul.not_spec_checked": _unchecked,
    "matmul.suspect": lambda f: (
        f"{f['best']:.1f} TFLOP/s at {tuple(f['shape'])} exceeds the {f['dtype']} spec-sheet "
        f"peak {f['spec']:g} TFLOP/s by {f['ratio']:.2f}x (allowed {f['allowed']}x): "
        "physically impossible, so the timing is wrong; no headline"
    ),
    "matmul.cpu_threads": "CPU, {threads} torch threads",
    "matmul.cpu_half_slow": (
        "{dtype} on CPU is slow unless the CPU has native units (AMX, AVX512-BF16/FP16): often "
        "below fp32"
    ),
    "matmul.converged": (
        "converged: the last {last} probes added < {gain:share0} to the best ({probes} probes)"
    ),
    "matmul.budget_reached": "budget {budget_s:g} s reached after {probes} probes",
    "matmul.no_probe": "the budget did not allow a single probe",
    "bandwidth.timer_zero": "the timer read 0 s",
    "bandwidth.cpu_only_torch": "needs a CUDA GPU: torch {torch} is a CPU-only build",
    "bandwidth.too_few_gpus": lambda f: (
        "needs a CUDA GPU: torch sees no CUDA device"
        if f["needed"] == 1
        else f"needs {f['needed']} or more GPUs: this node has {f['count']}"
    ),
    "smoke.passed": _passed,
    "smoke.hung": "no result after {wall_s:.0f} s (hung rendezvous or collective); killed",
    "smoke.exited": "torchrun exited with {returncode}: {cause}",
    "smoke.wrong_results": (
        "WRONG RESULTS: {wrong_elements} wrong all_reduce element(s) (expected "
        "{expected_value}), all_gather ranks {all_gather_ranks}"
    ),
    "smoke.too_few_ranks": "ran on {world} rank(s), expected {planned}",
    "smoke.quick": "--quick: live torchrun test not run",
    "smoke.no_torch": "needs torch, which could not be imported",
    "smoke.fix_logs": _LOGS,
    "smoke.fix_hung": (
        _LOGS + "; check firewall/loopback and NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME"
    ),
    "smoke.fix_corrupt": (
        "the collective library returns corrupt data: check the GPU (ECC), driver and NCCL "
        "version before training on this node"
    ),
    "smoke.fix_ranks": (_LOGS + "; check CUDA_VISIBLE_DEVICES and that no other job holds a GPU"),
}
