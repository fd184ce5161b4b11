"""`--tool auto` takes torch.profiler, even on GPUs with nsys on PATH (CUDA toolkits and NGC
containers ship it): a first profile never rides a capture path not yet proven on the node;
nsys is used when asked for by name, and its absence then is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscale.contracts.errors import ToolNotFoundError
from torchscale.contracts.finding import Finding
from torchscale.orchestration.profiling import nsys, session


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_auto_takes_torch_profiler_with_nsys_on_path(
    monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    monkeypatch.setattr(nsys, "find_nsys", lambda: Path("/usr/local/cuda/bin/nsys"))
    tool, why = session.resolve_tool("auto", device)
    assert tool == "torch"
    assert why is not None and why.endswith("using torch.profiler")
    if device == "cuda":
        assert "--tool nsys uses it" in why


def test_nsys_by_name_is_used_or_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nsys, "find_nsys", lambda: Path("/opt/nsys/bin/nsys"))
    assert session.resolve_tool("nsys", "cuda") == ("nsys", None)
    monkeypatch.setattr(nsys, "find_nsys", lambda: None)
    with pytest.raises(ToolNotFoundError, match="--tool nsys: Nsight Systems"):
        session.resolve_tool("nsys", "cuda")
    tool, why = session.resolve_tool("auto", "cuda")
    assert tool == "torch" and why is not None and "no nsys found" in why


@pytest.mark.slow  # starts an nsys command
def test_profile_refuses_a_compiled_cell_without_a_toolchain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`profile` checks the compile toolchain up front, as `benchmark` does: a node without a
    C compiler gets one line and nothing launches, never inductor's traceback from a rank."""
    import dataclasses

    from torchscale.interfaces.api import profile as api
    from torchscale.orchestration.validate import compile_toolchain
    from torchscale.orchestration.validate.compile_toolchain import Toolchain

    real_plan = api.plan_profile

    def compiled(*args, **kwargs):  # type: ignore[no-untyped-def]
        plan = real_plan(*args, **kwargs)
        training = plan.planned.training.model_copy(update={"compile": True})
        planned = dataclasses.replace(plan.planned, training=training)
        return dataclasses.replace(plan, planned=planned)

    why = Finding(code="compile.failed", figures={"reason": "no C compiler (cc) found"})
    broken = Toolchain("cpu", ok=False, findings=[why], fix=[Finding(code="compile.fix_cpu")])
    monkeypatch.setattr(api, "plan_profile", compiled)
    monkeypatch.setattr(compile_toolchain, "toolchain_for", lambda device, env: broken)
    launched: list[object] = []
    monkeypatch.setattr(
        "torchscale.orchestration.profiling.session.launch_profiled",
        lambda *a, **k: launched.append(a),
    )
    options = api.ProfileOptions(gpus=2, device="cpu", steps=2)
    with pytest.raises(ToolNotFoundError, match=r"torch\.compile cannot build a kernel on cpu"):
        api.run_profile(options, tmp_path)
    assert launched == []


def test_profile_refuses_a_compiled_cell_without_a_toolchain_whatever_nsys_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The checks above with no nsys found (in-process): `--tool auto` asks for one, and the
    toolchain's refusal does not depend on the answer."""
    monkeypatch.setattr(nsys, "find_nsys", lambda *a, **k: None)
    test_profile_refuses_a_compiled_cell_without_a_toolchain(monkeypatch, tmp_path)
