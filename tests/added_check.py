"""A made-up `torchscale validate` check for tests/orchestration/test_adding_a_validate_check.py:
what a new
check function in torchscale/orchestration/validate/checks_<area>.py looks like (docs/
architecture.md, "A validate check"). It takes the `ValidateContext` and returns one
`CheckResult` made by `passed`, `warned`, `failed` or `skipped` (check_result.py), what it
found and the fix as findings (codes and figures; a real check words them in
contracts/wording/<area>.py, an unworded code shows as its code and figures)."""

from __future__ import annotations

from torchscale.contracts.finding import Finding
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import CheckResult, skipped, warned

CHECK_ID = "added"
TITLE = "Added check"
SEEN = Finding(code="added.made_up", figures={"device": "cpu"})
HINT = Finding(code="added.fix_nothing")
ELSEWHERE = Finding(code="added.cpu_only")


def check_added(ctx: ValidateContext) -> CheckResult:
    """A WARN on the CPU path (so it shows in the verdict and, with --fail-on warn, the exit
    code); SKIP elsewhere, saying why, as a check that cannot run here does."""
    if ctx.device != "cpu":
        return skipped(CHECK_ID, TITLE, ELSEWHERE)
    seen = Finding(code="added.made_up", figures={"device": ctx.device})
    return warned(CHECK_ID, TITLE, seen, HINT, seen=1)
