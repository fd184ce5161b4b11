"""Memory suite: the largest batch that fits (`memory.max_batch_search`, docs/memory.md): the
search (search.py), its probes (probe.py), its runs (max_batch_runs.py) and their result
(max_batch_result.py). Callers import the module they need: the search needs the sweep's launch
path (and pandas), which a reader of the results alone should not pay for.
"""
