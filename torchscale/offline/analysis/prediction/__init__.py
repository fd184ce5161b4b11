"""Forecasts of cells not yet measured, from those that were, and how they scored."""
