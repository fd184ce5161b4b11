"""Reading profiler traces (Kineto JSON, Nsight Systems SQLite) into per-rank event tables."""
