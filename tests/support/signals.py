"""The allocator's signals (gpudev.signals.Signals) for tests that look only at the database."""

from __future__ import annotations

from gpudev.signals import Wake


class AcceptingSignals:
    """Step Functions that takes every wake and reports every execution still running."""

    def wake(self, task_token: str, wake: Wake) -> bool:
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        return True
