"""Whether the node's GPUs of one model are set up alike: VBIOS, ECC mode, MIG mode, power
limit and application clocks (docs/validate.md, 'GPU settings agree'). A node accepted from a
vendor is expected to be uniform; the odd GPU is the one every DDP step waits for (a lower
power limit or clock), or the one training cannot use whole (MIG on). The driver is one per
node (NVML reports it once), so it is stated, not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import NvmlGpu, call, gpu_identity
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import CheckResult, CheckStatus, found, worst
from torchscale.orchestration.validate.checks_gpu import nvml_or_skip


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _on(value: Any) -> str:
    return "on" if value else "off"


# setting -> (how it is read, the status when one GPU differs); a differing MIG mode is a FAIL:
# a GPU in MIG mode cannot be used whole by a training rank
SETTINGS: dict[str, tuple[Callable[[Any, Any], Any], CheckStatus]] = {
    "vbios": (lambda nv, h: _text(nv.nvmlDeviceGetVbiosVersion(h)), CheckStatus.WARN),
    "ecc_mode": (lambda nv, h: _on(nv.nvmlDeviceGetEccMode(h)[0]), CheckStatus.WARN),
    "mig_mode": (lambda nv, h: _on(nv.nvmlDeviceGetMigMode(h)[0]), CheckStatus.FAIL),
    "power_limit_w": (
        lambda nv, h: round(nv.nvmlDeviceGetPowerManagementLimit(h) / 1000),
        CheckStatus.WARN,
    ),
    "app_clock_sm_mhz": (
        lambda nv, h: int(nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM)),
        CheckStatus.WARN,
    ),
    "app_clock_mem_mhz": (
        lambda nv, h: int(nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_MEM)),
        CheckStatus.WARN,
    ),
}
HINT = Finding(code="gpus.fix_settings")


def read_settings(pynvml: Any, gpu: NvmlGpu) -> dict[str, tuple[Any, str | None]]:
    """Each setting of one GPU: (value, None) or (None, why it could not be read)."""
    return {name: call(read, pynvml, gpu.handle) for name, (read, _) in SETTINGS.items()}


def settings_findings(
    gpus: list[NvmlGpu], readings: dict[int, dict[str, tuple[Any, str | None]]]
) -> tuple[CheckStatus, list[Finding]]:
    """The settings compared among the GPUs of each model: a GPU whose value is not its
    model's most common one is named; a value NVML cannot give is not readable, never a
    difference."""
    findings: list[Finding] = []
    statuses: list[CheckStatus] = []
    by_model: dict[str, list[NvmlGpu]] = {}
    for gpu in gpus:
        by_model.setdefault(gpu.name, []).append(gpu)
    agree: dict[str, Any] = {}
    for group in by_model.values():
        for name, (_, severity) in SETTINGS.items():
            read = {g.index: readings[g.index][name] for g in group}
            values = {i: v for i, (v, err) in read.items() if err is None}
            unread = sorted(i for i, (_, err) in read.items() if err is not None)
            if unread:
                why = {"setting": name, "gpus": unread, "error": _error(read[unread[0]][1])}
                findings.append(Finding(code="gpus.setting_not_readable", figures=why))
            if not values:
                continue
            counts = Counter(values.values()).most_common()
            usual = counts[0][0]
            odd = [g for g in group if g.index in values and values[g.index] != usual]
            if not odd:
                agree[name] = usual
                continue
            differs: dict[str, Any] = {
                "setting": name,
                "usual": usual,
                "usual_gpus": sorted(i for i, v in values.items() if v == usual),
                "gpus": [g.index for g in odd],
                "values": [values[g.index] for g in odd],
                "uuids": [g.uuid for g in odd],
                "serials": [g.serial for g in odd],
            }
            findings.append(Finding(code="gpus.setting_differs", figures=differs))
            statuses.append(severity)
    if agree:
        same = {"gpus": len(gpus), "settings": agree}
        findings.insert(0, Finding(code="gpus.settings_agree", figures=same))
        statuses.append(CheckStatus.PASS)
    return (worst(statuses) if statuses else CheckStatus.SKIP), findings


def _error(err: str | None) -> str:
    return (err or "no answer").split(":")[0]


def check_gpu_settings(ctx: ValidateContext) -> CheckResult:
    title = "GPU settings agree"
    pynvml, skip = nvml_or_skip(ctx, "gpu_settings", title)
    if skip:
        return skip
    gpus = [g for g in ctx.judged_gpus if g.handle is not None]
    readings = {g.index: read_settings(pynvml, g) for g in gpus}
    driver = Finding(code="gpus.one_driver", figures={"driver": ctx.nvml.driver_version})
    if len(gpus) < 2:
        one = Finding(code="gpus.one_to_compare", figures={"gpus": len(gpus)})
        return found("gpu_settings", title, CheckStatus.SKIP, [one, driver])
    status, findings = settings_findings(gpus, readings)
    hint = [HINT] if status in (CheckStatus.WARN, CheckStatus.FAIL) else []
    ids = {g.index: gpu_identity(g) for g in gpus}
    return found("gpu_settings", title, status, [*findings, driver], hint, ids=ids)
