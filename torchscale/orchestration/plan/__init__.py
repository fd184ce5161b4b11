"""Config -> the plan: one cell per model x batch size x world size x precision x strategy.

Pure functions over the validated config and a description of the machine. The plan resolves
everything a cell needs (its identity, worker spec contents, launch settings, what is skipped
and why), so the sweep only runs it and the whole plan is testable without launching anything.

- build.py: the cells in run order (`build_plan`): a built-in cell (`plan_cell`), a `jobs:`
  row's cell (`plan_job_cell`), the batches of `batch_sizes: auto`
- planned.py: what the plan hands on: the `Plan`, and each `PlannedCell` with its launch
  settings, worker spec and torchrun command
- nodes.py: the `Machine`, and what a cell gets of it: its shape on the nodes, its device,
  backend, ranks per GPU and threads
- definition.py: a cell's definition (the canonical JSON its id hashes, what --resume matches)
  and its identity
- skips.py: why the plan skips a cell, or what its result will warn of
"""
