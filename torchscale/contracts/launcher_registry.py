"""The launchers: `launcher.kind` -> where its `Launcher` class is, as "module:Class", one line per
launcher. The one registry of them: the config's `launcher.kind` accepts exactly these names and
`torchscale.orchestration.schedulers.launcher_for` imports the one a config names, when it is chosen
(Slurm's and Kubernetes' code stays out of a local run). A new launcher is its package under
`torchscale/orchestration/schedulers/` and one line here (docs/architecture.md, "Adding a
launcher").
"""

from __future__ import annotations

# launcher.kind -> "module:Class" of its Launcher (torchscale/orchestration/schedulers/api.py); the
# first is the config's default
LAUNCHERS: dict[str, str] = {
    "local": "torchscale.orchestration.schedulers.local.launcher:ThisNode",
    "slurm": "torchscale.orchestration.schedulers.slurm.launcher:SlurmAllocations",
    "k8s": "torchscale.orchestration.schedulers.kubernetes.launcher:KubernetesJobs",
}
