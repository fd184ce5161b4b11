"""A made-up `torchscale validate` check for tests/orchestration/test_adding_a_validate_check.py:
what a new
check function in torchscale/orchestration/validate/checks_<area>.py looks like (docs/
architecture.md, "A validate check"). It takes the `ValidateContext` and returns one
`CheckResult` made by `passed`, `warned`, `failed` or `skipped` (check_result.py)."""

from __future__ import annotations

from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import CheckResult, skipped, warned

CHECK_ID = "added"
TITLE = "Added check"
HINT = "nothing to fix: tests/added_check.py warns on purpose"


def check_added(ctx: ValidateContext) -> CheckResult:
    """A WARN on the CPU path (so it shows in the verdict and, with --fail-on warn, the exit
    code); SKIP elsewhere, saying why, as a check that cannot run here does."""
    if ctx.device != "cpu":
        return skipped(CHECK_ID, TITLE, "runs on the CPU path only (--device cpu)")
    return warned(CHECK_ID, TITLE, f"a made-up finding on the {ctx.device} path", HINT, seen=1)
