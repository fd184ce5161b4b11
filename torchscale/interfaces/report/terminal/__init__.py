"""What the report and the commands print to a terminal as text, one module per job.

- a report: `report_summary` (the term format's default, at most 60 lines), `report_full`
  (`--full`), `report_recap` (the few lines after a report written to a file);
- `diagnosis`: a run's one diagnosis as lines (sweep and profile alike);
- shared with the commands' output (`interfaces/console/`): `lines` (a line and its level: the
  CLI colours by level), `fit` (tables fitted to the width: columns left out or abbreviated,
  figures never cut).

The term format of `report/render/` (the renderer protocol) is `report_summary` and
`report_full`, behind `render/term.py`.
"""
