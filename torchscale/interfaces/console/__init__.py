"""What the benchmark, profile and comm commands print as they run, one module per job.

- the sweep: `cells` (each cell's lines as it runs), `live_table` (the table redrawn in place
  while the sweep runs), `dry_run` (what --dry-run shows), `sweep_tables` (a table per model,
  sized to the terminal);
- `profile`: `torchscale profile` and the profiles after a sweep;
- `comm`: a comm result as the table nccl-tests users read.

The lines themselves (`Line`, levels, fitting to the width) and a diagnosis' lines are the
report's terminal package's (`report/terminal/`), which the `report -f term` format shares;
figures are formatted as the report formats them, so a number reads the same everywhere.
"""
