"""GPU and process telemetry sampled during the measured windows (docs/telemetry.md).

A sampler thread per rank (sampler.py) reads its sources (NVML for the rank's GPU, psutil for
its process) between a window's edges; pure functions (window_figures.py) turn the samples into the
result's figures. Nothing here touches the training loop beyond starting and stopping the thread
outside the timed steps.
"""
