#!/bin/bash
# gpu-dev-run CMD [ARG...]: runs CMD on every node of the reservation at once (over SSH,
# node-0 ... node-N of /etc/gpu-dev/hostfile), each with its NODE_RANK, in the current
# directory, and streams every node's output prefixed with `[node-N]`. Its status is 0 when
# CMD succeeded everywhere, else the first failing node's. Shipped in the nodes' ConfigMap
# (cluster/node_access.py) and installed as /usr/local/bin/gpu-dev-run.
#   gpu-dev-run torchrun train.py     # one 16- or 32-GPU job from node 0
set -u
HOSTFILE=${GPU_DEV_HOSTFILE:-/etc/gpu-dev/hostfile}
if [ $# -eq 0 ]; then
  echo "usage: gpu-dev-run CMD [ARG...]  (runs CMD on every node of $HOSTFILE)" >&2
  exit 2
fi
[ -r "$HOSTFILE" ] || { echo "gpu-dev-run: no $HOSTFILE: not a multinode reservation" >&2; exit 2; }
command=$(printf '%q ' "$@")
here=$(printf '%q' "$PWD")
pids=()
hosts=()
rank=0
while read -r host _; do
  [ -n "$host" ] || continue
  (
    ssh -n "$host" "cd $here 2>/dev/null; export NODE_RANK=$rank PET_NODE_RANK=$rank; $command" 2>&1 \
      | sed -u "s/^/[$host] /"
    exit "${PIPESTATUS[0]}"
  ) &
  pids+=($!)
  hosts+=("$host")
  rank=$((rank + 1))
done < "$HOSTFILE"
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" && continue
  code=$?
  echo "gpu-dev-run: ${hosts[$i]} exited with status $code" >&2
  [ "$status" -ne 0 ] || status=$code
done
exit "$status"
