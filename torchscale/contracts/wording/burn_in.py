"""Words for `validate --level burn`'s findings (orchestration/validate/burn_in.py judges; the
rules are docs/validate.md's 'Burn-in')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


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


PHRASES: Phrases = {
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
}
