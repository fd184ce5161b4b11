"""Result schemas: what a cell's ranks write (`cell_result`) and what a profile's analysis
writes (`profile_analysis`), versioned. Everything that reads or writes results (the ranks, the
host's store, the offline readers, the analysis) agrees through these types.
"""
