"""How the launch tells a CPU rank to bind itself to cores of its own.

The plan decides (`launcher.cpu_binding`), the torchrun command carries the decision in the
ranks' environment (launch as data), and each rank binds itself before it starts any thread
(torchscale/rank/worker/cpu_binding.py). One name, shared by both sides.
"""

from __future__ import annotations

CPU_BINDING_ENV = "TORCHSCALE_CPU_BINDING"
BIND_TO_CORES = "cores"
