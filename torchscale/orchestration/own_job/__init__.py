"""`torchscale profile -- COMMAND`: the user's own launch line, run unchanged through the one
launch path with the probe on its PYTHONPATH, its ranks' measurements combined into one
CellResult by the worker's own aggregation (docs/own-job.md)."""
