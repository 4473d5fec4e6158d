# gpu-dev: a multinode reservation's pod, set up by root at every container start. Shipped
# in the nodes' ConfigMap (node_access.py) and sourced by startup.sh before it writes the
# pod's environment for SSH sessions, so what this exports reaches them too.
#
# - EFA: the aws-ofi-nccl plugin and libfabric directories the image has go on
#   LD_LIBRARY_PATH (fabric.py sets GPU_DEV_OFI_NCCL_PATH on EFA pods), and a locked-memory
#   limit that EFA cannot work with is said out loud.
# - dev's key between the pods: the private half for dev alone, the public half opening dev
#   (sshd's second AuthorizedKeysFile, root's), the ssh config with the node-N aliases, the
#   hostfile and the launcher.
gpu_dev_nodes_setup() {
  local nodes=$ROOT/etc/gpu-dev/nodes key=$ROOT/etc/gpu-dev/node-key dir locked
  if [ -n "${GPU_DEV_OFI_NCCL_PATH:-}" ]; then
    local IFS=:
    for dir in $GPU_DEV_OFI_NCCL_PATH; do
      [ -d "$ROOT$dir" ] || continue
      case ":${LD_LIBRARY_PATH:-}:" in
        *":$dir:"*) ;;
        *) export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
      esac
    done
    unset IFS
    locked=$(ulimit -l)
    [ "$locked" = unlimited ] \
      || echo "gpu-dev: locked memory is limited to ${locked} KiB; EFA needs it unlimited" \
        "(docs/multinode.md)" >&2
  fi
  [ -s "$key/id_ed25519" ] || return 0
  install -d -m 755 "$ROOT/run/gpu-dev/nodes" "$ROOT/etc/ssh/authorized_keys_nodes" \
    "$ROOT/etc/ssh/ssh_config.d" "$ROOT/usr/local/bin"
  install -m 600 -o dev "$key/id_ed25519" "$ROOT/run/gpu-dev/nodes/id_ed25519"
  install -m 644 -o root -g root "$key/id_ed25519.pub" "$ROOT/etc/ssh/authorized_keys_nodes/dev"
  install -m 644 "$nodes/hostfile" "$ROOT/etc/gpu-dev/hostfile"
  install -m 644 "$nodes/ssh_config" "$ROOT/etc/ssh/ssh_config.d/gpu-dev-nodes.conf"
  install -m 755 "$nodes/gpu-dev-run" "$ROOT/usr/local/bin/gpu-dev-run"
  # an image whose ssh_config does not read ssh_config.d reads ours all the same
  touch "$ROOT/etc/ssh/ssh_config"
  grep -q 'ssh_config\.d' "$ROOT/etc/ssh/ssh_config" \
    || echo 'Include /etc/ssh/ssh_config.d/gpu-dev-nodes.conf' >> "$ROOT/etc/ssh/ssh_config"
}
gpu_dev_nodes_setup
