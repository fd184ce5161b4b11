"""NVML's raw answers beside validate's verdict on them, for a GPU session to keep.

validate's NVLink, fabric and GPU checks were written against NVML's documentation and fake
answers (tests/fake_nvml.py); no multi-GPU board has answered them yet. This prints what NVML
itself says, call by call (the driver, every GPU's identity, each link's state, version and
error counters, the fabric registration), then the verdicts validate draws from the same
answers, so a reader can hold one against the other.

    python benchmarks/nvml_raw.py
"""

from __future__ import annotations

import os
from pathlib import Path

from torchscale.contracts import wording
from torchscale.contracts.nvml import call, fabric_info, probe_nvml
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.checks_gpu import check_ecc, check_gpus
from torchscale.orchestration.validate.checks_nvlink import (
    ERROR_COUNTERS,
    check_fabric,
    check_nvlink,
)


def raw_answers() -> None:
    """Every NVML answer validate's checks read, as NVML gives it (errors by name)."""
    state = probe_nvml()
    print(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}")
    if not state.ok or state.module is None:
        print(f"NVML: {state.error}")
        return
    nvml = state.module
    print(f"driver {state.driver_version}, CUDA up to {state.cuda_driver_version}")
    for gpu in state.gpus:
        print(f"GPU {gpu.index}: {gpu.name} {gpu.uuid} bus {gpu.bus_id} serial {gpu.serial}")
        if gpu.handle is None:
            continue
        print(f"  fabric (state, status) or why not: {fabric_info(nvml, gpu.handle)}")
        for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
            link_state, err = call(nvml.nvmlDeviceGetNvLinkState, gpu.handle, link)
            if err is not None:
                print(f"  link {link}: state {err}")
                continue
            version, _ = call(nvml.nvmlDeviceGetNvLinkVersion, gpu.handle, link)
            counters = {
                name: call(
                    nvml.nvmlDeviceGetNvLinkErrorCounter, gpu.handle, link, getattr(nvml, const)
                )
                for name, const in ERROR_COUNTERS.items()
            }
            said = ", ".join(f"{n} {v if e is None else e}" for n, (v, e) in counters.items())
            print(f"  link {link}: state {link_state}, version {version}, {said}")
    nvml.nvmlShutdown()


def verdicts() -> None:
    """validate's checks over the same answers, worded as validate words them."""
    ctx = ValidateContext(device="cuda", output_dir=Path.cwd(), quick=True)
    try:
        for check in (check_gpus, check_ecc, check_nvlink, check_fabric):
            result = check(ctx)
            print(f"{result.id}: {result.status.value}")
            for finding in result.findings:
                print(f"  {wording.say(finding)}")
    finally:
        ctx.close()


if __name__ == "__main__":
    raw_answers()
    verdicts()
