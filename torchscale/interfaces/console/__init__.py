"""Everything printed to a terminal, one module per job (the map: docs/architecture.md, "The
layers"); the library (api/) and the report's model (report/) print nothing. Figures are
formatted by `interfaces/formatting.py`, as the report's files format them, so a number reads
the same everywhere."""
