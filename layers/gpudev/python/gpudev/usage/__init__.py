"""Usage accounting (GPU-hours, queue waits, outcomes, fleet utilisation) and the operators'
services (every live reservation, a force-cancel with its reason)."""
