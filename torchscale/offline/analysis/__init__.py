"""Pure functions over measurements: statistics, scaling, communication, stalls."""
