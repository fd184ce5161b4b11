"""`python -m torchscale.rank.programs <name> ARGS`: every rank of every torchrun program
besides the cell worker starts here.

The prelude comes first, before torch is imported (seconds): a torchrun that dies from here on
takes this rank along. Then the named program's module is imported and handed to the harness.
"""

from __future__ import annotations

if __name__ == "__main__":
    from torchscale.rank.worker.diagnostics import die_with_torchrun

    die_with_torchrun()

    import importlib
    import sys

    from torchscale.contracts.rank_programs import PROGRAMS

    if len(sys.argv) < 2 or sys.argv[1] not in PROGRAMS:
        sys.exit(f"usage: python -m torchscale.rank.programs {{{','.join(PROGRAMS)}}} ARGS")
    from torchscale.rank.worker.harness import main

    main(importlib.import_module(PROGRAMS[sys.argv[1]]).PROGRAM, sys.argv[2:])
