-- Whether the reservation's pod can serve Jupyter, as node 0's init container reported it
-- (its termination message, read with the pod at readiness; issue #15): NULL until the pod
-- said (or a pod made before this check), true, or false with the reason in the existing
-- `jupyter_error`. No Jupyter URL is shown, and enabling Jupyter is refused, unless the
-- pod said true.
ALTER TABLE reservations ADD COLUMN jupyter_available boolean;

GRANT UPDATE (jupyter_available, jupyter_error) ON reservations TO gpudev_lifecycle;
