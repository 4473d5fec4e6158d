"""The reservation lifecycle: the tasks of the reservation state machine, the jobs consumer
that starts and wakes executions, and the GitHub keys they install."""
