"""The programs torchrun starts besides the cell worker: the collective sweep (`comm`), the
smoke test, `validate --level perf` and `--level burn`, and the compile probe's child process.

Each torchrun program is a body handed to one harness (rank/worker/harness.py), which owns
what every rank does around its work: the prelude before torch is imported, the process group,
gathering, rank 0's atomic write and the teardown. torchrun starts them all through one entry,
`python -m torchscale.rank.programs <name> ARGS` (__main__.py), by the names in
contracts/rank_programs.py, which the host reads.
"""
