"""Collective benchmarks read and summed up without running anything: the rows of a sweep
(`rows`), the nccl-tests-style footer and noise gate (`nccl_footer`), and the reader of NVIDIA
nccl-tests output (`nccl_tests/`, with `nccl_infer` for what a pasted log leaves unsaid). The
comm program's ranks (rank/programs/comm.py), the host's sweep and `torchscale comm --import`
all use them.
"""
