"""Write a synthetic multi-rank Kineto trace directory (see synthetic_traces.py).

    python benchmarks/make_trace.py OUT_DIR --ranks 4 --steps 20 --straggler 1 --delay-us 50000 \\
        --phase backward --skew-us 500 [--events-per-step 240] [--cpu] [--gzip] [--seed 0]

About 330 bytes per event: `--ranks 1 --steps 300 --events-per-step 2500` writes one rank of
about 330 MB, the size `benchmarks/trace_parse.py` was measured on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from synthetic_traces import PHASE_US, write_synthetic_traces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--straggler", type=int, default=None, help="rank that is slow every step")
    ap.add_argument("--delay-us", type=float, default=0.0, help="its delay per step, in us")
    ap.add_argument("--phase", choices=sorted(PHASE_US), default="backward")
    ap.add_argument("--skew-us", type=float, default=None, help="clock skew bound per rank, us")
    ap.add_argument("--events-per-step", type=int, default=240)
    ap.add_argument("--cpu", action="store_true", help="gloo on CPU instead of NCCL on GPUs")
    ap.add_argument("--gzip", action="store_true", help="write .json.gz")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths = write_synthetic_traces(
        args.out_dir,
        ranks=args.ranks,
        steps=args.steps,
        straggler=args.straggler,
        delay_us=args.delay_us,
        phase=args.phase,
        skew_us=args.skew_us,
        events_per_step=args.events_per_step,
        gpu=not args.cpu,
        seed=args.seed,
        compress=args.gzip,
    )
    for path in paths:
        print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
