"""The simulated scheduler's FailedScheduling message (the PodScheduled condition's), in
the shape kube-scheduler gives it: what ruled out the nodes, then the preemption verdict."""

from __future__ import annotations

GPU = "nvidia.com/gpu"


def scheduling_failure(nodes: int, gpus: int, claim_problem: str | None, conflicts: int) -> str:
    """The scheduler's FailedScheduling message: a claim problem (every node), else nodes
    refused for a volume's node affinity, else GPUs or selectors."""
    preemption = (
        f" preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful "
        "for scheduling."
    )
    if claim_problem:
        return f"0/{nodes} nodes are available: {claim_problem}.{preemption}"
    if conflicts:
        others = nodes - conflicts
        rest = f", {others} node(s) didn't match Pod's node affinity/selector" if others else ""
        return (
            f"0/{nodes} nodes are available: {conflicts} node(s) had volume node affinity "
            f"conflict{rest}.{preemption}"
        )
    return (
        f"0/{nodes} nodes are available: {nodes} Insufficient {GPU} "
        f"or node(s) didn't match Pod's node affinity/selector (wanted {gpus} GPUs)."
    )
