#!/bin/bash
# gpu-dev-run CMD [ARG...]: runs CMD on every node of the reservation at once (over SSH,
# node-0 ... node-N of /etc/gpu-dev/hostfile), each with its NODE_RANK, in the current
# directory, and streams every node's output prefixed with `[node-N]`. Its status is 0 when
# CMD succeeded everywhere, else the first failing node's. Shipped in the nodes' ConfigMap
# (cluster/node_access.py) and installed as /usr/local/bin/gpu-dev-run.
#   gpu-dev-run torchrun train.py     # one 16- or 32-GPU job from node 0
# Ctrl+C (or a TERM) ends CMD on every node: each node's ssh runs as a job of its own
# (set -m), the trap ends those jobs, and `ssh -tt` gives CMD a terminal on the node, which
# sshd hangs up (SIGHUP to CMD) when the connection closes. A node without the current
# directory runs nothing and exits 97.
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
# shellcheck disable=SC2329  # called by the traps below
stop() {
  trap '' INT TERM HUP
  echo "gpu-dev-run: stopping it on every node" >&2
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null
  done
  wait
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
set -m
rank=0
while read -r host _; do
  [ -n "$host" ] || continue
  (
    ssh -n -tt "$host" "cd $here || { echo 'gpu-dev-run: no directory '$here' on this node' >&2; exit 97; }; export NODE_RANK=$rank PET_NODE_RANK=$rank; $command" 2>&1 \
      | sed -u "s/\r\$//; s/^/[$host] /"
    exit "${PIPESTATUS[0]}"
  ) &
  pids+=($!)
  hosts+=("$host")
  rank=$((rank + 1))
done < "$HOSTFILE"
set +m
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" && continue
  code=$?
  echo "gpu-dev-run: ${hosts[$i]} exited with status $code" >&2
  [ "$status" -ne 0 ] || status=$code
done
exit "$status"
