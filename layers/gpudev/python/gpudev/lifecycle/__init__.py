"""The reservation lifecycle: the tasks of the reservation state machine, the pod objects
they manage, and the signals that wake a parked execution."""
