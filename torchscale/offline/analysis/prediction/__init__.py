"""Scaling forecasts from what was measured: one module per term of the forecast step
(compute and its contention, exposed communication, stragglers), `inputs.py` (what a measured
cell contributes), `figures.py` (figures with intervals, combined) and `forecast.py`, which
assembles a `Forecast` and back-tests the model on the measured world sizes; `score.py` judges
a forecast against the cell that later measured it. The model and each formula:
docs/prediction.md. Pure functions: nothing here reads files or prints.
"""
