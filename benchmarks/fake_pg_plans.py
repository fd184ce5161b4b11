r"""The zoo's plans at 8, 16 and 64 ranks, checked on torch's fake process group in one process
(benchmarks/plan_check.py): for every model, world and layout the worker's own
set-up runs as each rank in turn, the model on the meta device. Printed as a Markdown table
(docs/strategies.md, "The plans the fake process group checked").

    python benchmarks/fake_pg_plans.py [--models gpt2,bert-base,vit-b16] [--worlds 8,16,64] \
        [--batch 16] [--ranks all|ends]

Columns: the layout; the verdict (ok: the ranks' shares add up to the model, each element held
once with every replica and copy divided out; mismatch; sampled: --ranks ends, shapes only;
skipped: the plan refuses the layout, with its reason code); the parameters and fp32 MB of the
smallest and largest rank; under pipelining each pipeline rank's parameters in stage order, the
blocks of each stage, each stage's forward FLOPs per sample (the cost model that balances them),
the micro-batch size and the most parameters any rank builds for real to get its stages. No
figure is timed: the fake backend moves no data (the module docstring says what it cannot
check).
"""

from __future__ import annotations

import argparse
import time

from plan_check import PlanCheck, check_plan, zoo_plans

MB = 1e6


def _row(check: PlanCheck) -> str:
    if check.skipped is not None:
        head = f"| {check.model} | {check.world} | {check.layout}"
        return f"{head} | skipped: {check.skipped.code} |||||||"
    params = sorted(r.parameters for r in check.ranks)
    sizes = sorted(r.parameter_bytes for r in check.ranks)
    stages = split = micro = flops = built = ""
    pipe = [r for r in check.ranks if r.pipeline]
    if pipe:
        group = check.shape.pp if check.shape is not None else 1
        first = [r for r in pipe if r.rank < group]
        stages = " / ".join(f"{r.parameters / MB:.1f}M" for r in first)
        split = "; ".join(s["holds"] for s in pipe[0].pipeline["pp_stages"])
        micro = str(pipe[0].pipeline["pp_microbatch_size"])
        flops = " / ".join(
            f"{s['forward_flops_per_sample'] / 1e9:.1f}" for s in pipe[0].pipeline["pp_stages"]
        )
        built = f"{max(r.pipeline['pp_built_parameters'] for r in pipe) / MB:.1f}M"
    return (
        f"| {check.model} | {check.world} | {check.layout} | {check.verdict()} "
        f"| {params[0] / MB:.2f}M-{params[-1] / MB:.2f}M "
        f"| {sizes[0] / MB:.0f}-{sizes[-1] / MB:.0f} | {stages} | {split} | {flops} | {micro} "
        f"| {built} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,bert-base,vit-b16")
    parser.add_argument("--worlds", default="8,16,64")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--ranks", choices=("all", "ends"), default="all")
    args = parser.parse_args()
    print(
        "| model | world | layout | verdict | params per rank (min-max) | fp32 MB per rank "
        "| pipeline ranks' params | stages hold | stages' forward GFLOP per sample | micro-batch "
        "| built per rank (max) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for model in args.models.split(","):
        for world in (int(w) for w in args.worlds.split(",")):
            ranks = None if args.ranks == "all" else [0, 1, world - 1]
            for strategy, shape in zoo_plans(world):
                check = check_plan(model, strategy, shape, world, args.batch, ranks=ranks)
                print(_row(check), flush=True)
    print(f"\nbatch {args.batch} per replica, fp32; {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
