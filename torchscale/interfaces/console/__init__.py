"""Everything printed to a terminal, one module per job; the library (api/) and the report's
model (report/) print nothing.

- where and how much: `streams` (the stdout and stderr consoles, lines fitted to the width,
  `Verbosity`), `lines` (a line and its level: the CLI colours by level), `fit` (tables fitted
  to the width: columns left out or abbreviated, figures never cut), `progress` (where long
  work stands: cell i/N, elapsed, ETA);
- the sweep: `benchmark` (what `torchscale benchmark` prints, from the library's events),
  `cells` (each cell's lines), `live_table` (the table redrawn in place while the sweep runs),
  `dry_run` (what --dry-run shows), `sweep_tables` (a table per model, sized to the terminal),
  `forecasts` (the forecasts checked against the cells);
- `diagnosis`: a run's one diagnosis as lines (sweep and profile alike);
- `profile`: `torchscale profile` and the profiles after a sweep;
- `comm`: a comm result as the table nccl-tests users read;
- a report: `report_term` (the term format: `report_summary`, at most 60 lines, or
  `report_full` with --full), `report_recap` (the few lines after a report written to a file).

Figures are formatted by `interfaces/formatting.py`, as the report's files format them, so a
number reads the same everywhere.
"""
