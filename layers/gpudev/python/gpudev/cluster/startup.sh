#!/bin/bash
# The dev pod's startup script: the container's command (`bash -c`, the pod manifest in
# objects.py). It runs as root: makes the `dev` user (passwordless sudo), gives SSH sessions
# the pod's environment (/etc/profile.d and sshd's SetEnv), puts the default dotfiles in a
# home on its first use, installs the control loop that applies the reservation's mounted
# ConfigMap and Secret (SSH keys, banner, Jupyter), applies them once, then becomes sshd.
#
# GPU_DEV_ROOT (unset in pods: /) roots every path it writes, so
# tests/unit/test_startup_sandbox.py runs this very file in a temporary directory with the
# system commands stubbed. The dev image (deploy/dev-image/Dockerfile) has sshd, sudo and
# Jupyter already; with the deployment's tools (GPU_DEV_TOOLS, cluster/pod_tools.py) any
# image gets sshd, sudo and a shell from the pod itself; otherwise an image without sshd or
# sudo gets them from apt-get at boot. Never Jupyter: node 0's init container
# (jupyter_check.sh) tells the control plane it is missing.
set -u
ROOT=${GPU_DEV_ROOT:-}
ROOT=${ROOT%/}
export GPU_DEV_ROOT=$ROOT  # the control loop's paths
# Each step on stdout with its time (UTC, bash's own clock: no `date` needed): the
# container's log, which Fluent Bit ships to CloudWatch Logs and `gpu-dev logs` reads
# (docs/logs.md). The local cloud's kubelet prints the same lines (container_logs.py).
step() { TZ=UTC0 printf '%(%Y-%m-%dT%H:%M:%SZ)T gpu-dev: %s\n' -1 "$*"; }
step "starting the dev server (node ${NODE_RANK:-0})"

# The deployment's tools, when the pod brought them (cluster/pod_tools.py: a static bash,
# sshd, sudo and busybox in $GPU_DEV_TOOLS/bin): after the image's own commands on PATH, so
# they only fill what the image lacks, and nothing is installed from the network at boot.
LOGIN_SHELL=/bin/bash
if [ -n "${GPU_DEV_TOOLS:-}" ] && [ -d "$GPU_DEV_TOOLS/bin" ]; then
  export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}:$GPU_DEV_TOOLS/bin"
  [ -x "$ROOT/bin/bash" ] || LOGIN_SHELL=$GPU_DEV_TOOLS/bin/bash  # an image without bash
fi
# `reserve --docker` (cluster/pod_docker.py): the Docker client the pod copied in, last on
# PATH too (an image's own docker wins); its plugins are linked below, with dev's group.
if [ -n "${GPU_DEV_DOCKER_CLI:-}" ] && [ -d "$GPU_DEV_DOCKER_CLI" ]; then
  export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}:$GPU_DEV_DOCKER_CLI"
fi

# Before anything else: the owner's home and the workspace are writable by dev alone. The
# kubelet makes an emptyDir 0777, so any other account could plant ~dev/.bash_profile (run
# as dev, who has sudo, at the next login or Jupyter start) or a module dev's Python would
# import from /workspace; a named disk's home gets the same at every boot. /dev/shm (an
# emptyDir too) gets /tmp's sticky bit: nobody deletes or replaces another user's segment.
mkdir -p "$ROOT/home/dev" "$ROOT/workspace"
chmod 755 "$ROOT/home/dev" "$ROOT/workspace"
[ -d "$ROOT/dev/shm" ] && chmod 1777 "$ROOT/dev/shm"

missing=()
command -v sshd >/dev/null || missing+=(openssh-server)
command -v sudo >/dev/null || missing+=(sudo)
# Up to 3 attempts, 5 s then 10 s apart: a second failed start is final for the reservation
# (pod_readiness.py), so a short DNS or mirror blip must not fail the first one.
install_missing() {
  local pause
  for pause in 5 10 last; do
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && return 0
    [ "$pause" != last ] || return 1
    echo "apt-get failed; trying again in ${pause}s" >&2
    sleep "$pause"
  done
}
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]} (the dev image has them: deploy/dev-image)"
  install_missing "${missing[@]}"
fi
# A startup that cannot go on says why in the container's termination message (the kubelet
# keeps it in the pod's status; the readiness check shows it to the user: pod_readiness.py).
# The words it starts with are gpudev.cluster.vocabulary.STARTUP_FAILED.
fail() {
  mkdir -p "$ROOT/dev"
  printf 'gpu-dev startup failed: %s\n' "$*" > "$ROOT/dev/termination-log" 2>/dev/null
  printf 'gpu-dev startup failed: %s\n' "$*" >&2
  exit 1
}
command -v sshd >/dev/null || fail "no sshd in this image, and apt-get could not install" \
  "openssh-server (the dev image has it: deploy/dev-image)"

if ! id dev >/dev/null 2>&1; then
  step "creating the user dev"
  useradd -m -u 1081 -s "$LOGIN_SHELL" dev 2>/dev/null || adduser -D -u 1081 -s "$LOGIN_SHELL" dev
fi
mkdir -p "$ROOT/etc/sudoers.d"
if [ -n "${GPU_DEV_TOOLS:-}" ]; then
  # The tools' sudo and sshd on an image that has neither: sudo's main file, and sshd's
  # privilege separation account and directory (an image with its own keeps them).
  [ -e "$ROOT/etc/sudoers" ] || printf 'root ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n' \
    > "$ROOT/etc/sudoers"
  chmod 440 "$ROOT/etc/sudoers"
  mkdir -p "$ROOT/var/empty"
  chmod 755 "$ROOT/var/empty"
  id sshd >/dev/null 2>&1 || useradd -r -M -d /var/empty -s /sbin/nologin sshd 2>/dev/null \
    || adduser -S -D -H -h /var/empty sshd
fi
# `reserve --docker`: dev may use the Docker sidecar's socket (its group is
# GPU_DEV_DOCKER_GID; an image's own `docker` group, whatever its number, is left alone).
if [ -n "${GPU_DEV_DOCKER_GID:-}" ]; then
  step "letting dev use Docker (DOCKER_HOST=${DOCKER_HOST:-})"
  docker_group=
  if [ -r "$ROOT/etc/group" ]; then
    while IFS=: read -r name _ gid _; do
      [ "$gid" = "$GPU_DEV_DOCKER_GID" ] && { docker_group=$name; break; }
    done < "$ROOT/etc/group"
  fi
  if [ -z "$docker_group" ]; then
    docker_group=gpu-dev-docker
    groupadd -g "$GPU_DEV_DOCKER_GID" "$docker_group" 2>/dev/null \
      || addgroup -g "$GPU_DEV_DOCKER_GID" "$docker_group"
  fi
  usermod -aG "$docker_group" dev 2>/dev/null || addgroup dev "$docker_group"
fi
# The Docker client's plugins (compose, buildx) where it looks, unless the image has its own.
if [ -n "${GPU_DEV_DOCKER_PLUGINS:-}" ] && [ -d "$GPU_DEV_DOCKER_PLUGINS" ] \
  && [ ! -e "$ROOT/usr/local/libexec/docker/cli-plugins" ]; then
  mkdir -p "$ROOT/usr/local/libexec/docker"
  ln -s "$GPU_DEV_DOCKER_PLUGINS" "$ROOT/usr/local/libexec/docker/cli-plugins"
fi
echo 'dev ALL=(ALL) NOPASSWD:ALL' > "$ROOT/etc/sudoers.d/dev"
chmod 440 "$ROOT/etc/sudoers.d/dev"
mkdir -p "$ROOT/workspace/.cache/huggingface" "$ROOT/home/dev"
# Not -R: a home restored from a snapshot loads its blocks lazily, and walking every inode
# of a conda env at each boot could outlast the readiness timeout; its files are dev's.
chown dev "$ROOT/workspace" "$ROOT/workspace/.cache" "$ROOT/workspace/.cache/huggingface" "$ROOT/home/dev"
chmod 755 "$ROOT/home/dev" "$ROOT/workspace"  # again: useradd -m may have set HOME_MODE

# The personal share (cluster/shared_files.py) is mounted under a directory only dev can
# enter, and /shared-personal is a link into it. Its access point makes every NFS request as
# dev (uid 1081) whoever asks in the pod, so the share's own 0700 would let an added user
# (gh-*, no sudo) in; the lookup through this parent is checked here, by the pod's kernel.
if [ -d "$ROOT/run/gpu-dev/share/mnt" ]; then
  chown dev "$ROOT/run/gpu-dev/share"
  chmod 700 "$ROOT/run/gpu-dev/share"
  if [ -L "$ROOT/shared-personal" ] || [ ! -e "$ROOT/shared-personal" ]; then
    ln -sfn /run/gpu-dev/share/mnt "$ROOT/shared-personal"
  fi
fi
# The team share (cluster/team_share.py), when the deployment has one: the same parent.
if [ -d "$ROOT/run/gpu-dev/share/team" ]; then
  chown dev "$ROOT/run/gpu-dev/share"
  chmod 700 "$ROOT/run/gpu-dev/share"
  if [ -L "$ROOT/shared" ] || [ ! -e "$ROOT/shared" ]; then
    ln -sfn /run/gpu-dev/share/team "$ROOT/shared"
  fi
fi

# A multinode reservation's pod: EFA's libraries, dev's key between the pods, the hostfile
# and gpu-dev-run (node_setup.sh, from the nodes' ConfigMap: cluster/node_access.py).
# shellcheck source=/dev/null
[ -r "$ROOT/etc/gpu-dev/nodes/setup.sh" ] && . "$ROOT/etc/gpu-dev/nodes/setup.sh"

# What the pod was given (env in objects.py: conda/CUDA paths, threads, NCCL, HF_HOME, the
# torchrun variables) is what every SSH session sees: login shells read /etc/profile.d,
# commands (`ssh host cmd`, VS Code, torchrun launchers) get sshd's SetEnv.
ENV_NAMES='^(PATH|LD_LIBRARY_PATH|LIBRARY_PATH|PYTHONPATH|LANG|LC_ALL|CONDA_[A-Z_]+|CUDA_[A-Z_]+'
ENV_NAMES+='|NV_[A-Z_]+|NVIDIA_[A-Z_]+|NCCL_[A-Z_]+|FI_[A-Z_]+|HF_[A-Z_]+|TORCH_[A-Z_]+'
ENV_NAMES+='|PYTORCH_[A-Z_]+|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_NUM_THREADS'
ENV_NAMES+='|NUMEXPR_MAX_THREADS|MAX_JOBS|CMAKE_BUILD_PARALLEL_LEVEL|MAKEFLAGS|GPU_TYPE'
ENV_NAMES+='|GPU_DEV_[A-Z_]+|NNODES|NODE_RANK|NPROC_PER_NODE|MASTER_ADDR|MASTER_PORT'
ENV_NAMES+='|DOCKER_HOST'
ENV_NAMES+='|PET_[A-Z_]+|CCACHE_[A-Z_]+|SCCACHE_[A-Z_]+)$'
mkdir -p "$ROOT/etc/profile.d" "$ROOT/etc/ssh" "$ROOT/run/gpu-dev"
{
  echo "# Written by the gpu-dev startup script at boot: the pod's environment."
  while IFS= read -r name; do
    [[ $name =~ $ENV_NAMES ]] && [ "$name" != GPU_DEV_ROOT ] || continue
    value=${!name}
    printf "export %s='%s'\n" "$name" "${value//\'/\'\\\'\'}"
  done < <(compgen -e | sort)
} > "$ROOT/etc/profile.d/gpu-dev-env.sh"
set_env=()
while IFS= read -r name; do
  [[ $name =~ $ENV_NAMES ]] && [ "$name" != GPU_DEV_ROOT ] || continue
  [[ ${!name} =~ [[:space:]\"] ]] && continue  # SetEnv has no quoting for these
  set_env+=("$name=${!name}")
done < <(compgen -e | sort)

# The banner (expiry warnings, pod health) before every prompt, and at login the expiry.
cat > "$ROOT/etc/profile.d/gpu-dev.sh" <<'PROFILE'
# gpu-dev: the reservation's banner before every prompt (written by gpu-dev-control).
gpu_dev_banner() {
  [ -s /run/gpu-dev/banner ] && cat /run/gpu-dev/banner
  return 0
}
if [ -n "${BASH_VERSION:-}" ] && [ -n "${PS1:-}" ]; then
  case ${PROMPT_COMMAND:-} in
    *gpu_dev_banner*) ;;  # sourced twice (/etc/profile reads /etc/bash.bashrc): once only
    *)
      PROMPT_COMMAND="gpu_dev_banner${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
      [ -s /run/gpu-dev/expiry ] && cat /run/gpu-dev/expiry
      ;;
  esac
fi
PROFILE
touch "$ROOT/etc/bash.bashrc"  # interactive shells that are not login shells (tmux, `bash`)
grep -q gpu-dev.sh "$ROOT/etc/bash.bashrc" \
  || echo '[ -r /etc/profile.d/gpu-dev.sh ] && . /etc/profile.d/gpu-dev.sh' >> "$ROOT/etc/bash.bashrc"

# Default dotfiles on a home's first use (a named disk at /home/dev keeps its files between
# reservations), marked by a file the snapshot keeps; never again afterwards. Done as dev,
# never as root: dev owns /home/dev, so root would follow any symlink dev left there (the
# marker included, dangling or not). A marker that exists in any form means initialized.
# Its exit status says which (10: first use), so root never even tests the marker.
# shellcheck disable=SC2016  # expanded by dev's shell (GPU_DEV_RESERVATION_ID is inherited)
su dev -s /bin/sh -c '[ -e "$HOME/.gpu-dev-initialized" ] || [ -L "$HOME/.gpu-dev-initialized" ] \
  || { cp -rn "$GPU_DEV_ROOT/etc/skel/." "$HOME/" 2>/dev/null; \
       [ -e "$HOME/.bashrc" ] || printf "%s\n" "PS1=\"\\u@\\h:\\w\\$ \"" "alias ll=\"ls -la\"" \
         > "$HOME/.bashrc"; \
       [ -e "$HOME/.bash_profile" ] || [ -e "$HOME/.profile" ] \
         || echo "[ -r ~/.bashrc ] && . ~/.bashrc" > "$HOME/.profile"; \
       echo "${GPU_DEV_RESERVATION_ID:-}" > "$HOME/.gpu-dev-initialized"; exit 10; }'
case $? in
  10) step "disk first use: default dotfiles copied to the home directory" ;;
  0) step "home directory set up by an earlier reservation (kept on the disk)" ;;
esac
install -d -m 755 "$ROOT/etc/ssh/authorized_keys"  # root's: no user can redirect writes

mkdir -p "$ROOT/usr/local/bin"
cat > "$ROOT/usr/local/bin/gpu-dev-control" <<'CONTROL'
#!/bin/bash
# Applies the reservation's mounted ConfigMap and Secret: SSH keys, banner, Jupyter. Once
# (no argument: the startup script, before sshd starts), or every 5 s with --watch.
# Keys live in /etc/ssh/authorized_keys/<account> (sshd's AuthorizedKeysFile), a directory
# only root writes: nothing a user does in a home directory can redirect these writes.
ROOT=${GPU_DEV_ROOT:-}
step() { TZ=UTC0 printf '%(%Y-%m-%dT%H:%M:%SZ)T gpu-dev: %s\n' -1 "$*"; }  # as startup.sh's
CONFIG=$ROOT/etc/gpu-dev/control KEYS=$ROOT/etc/gpu-dev/keys RUN=$ROOT/run/gpu-dev
install_keys() {  # account, keys file
  install -m 644 -o root -g root "$2" "$ROOT/etc/ssh/authorized_keys/$1.new" \
    && mv -f "$ROOT/etc/ssh/authorized_keys/$1.new" "$ROOT/etc/ssh/authorized_keys/$1"
}
add_account() {  # an added user's own account; its home is theirs alone
  id -- "$1" >/dev/null 2>&1 && return 0
  useradd -m -s /bin/bash -- "$1" 2>/dev/null || adduser -D "$1"
  chmod 700 -- "$ROOT/home/$1"
}
kill_processes_of() {  # uid: every process it runs (SSH sessions, tmux, jobs), till none
  local round pid status key real effective saved fs state
  local -a found
  for round in 1 2 3 4 5 6 7 8 9 10; do
    found=()
    for status in /proc/[0-9]*/status; do
      pid=${status#/proc/}; pid=${pid%/status}; state=''; real=''
      while read -r key real effective saved fs; do
        case $key in State:) state=$real ;; Uid:) break ;; esac
      done 2>/dev/null < "$status"
      [ "$state" != Z ] || continue  # dead already, waiting for its parent
      [[ " $real $effective $saved $fs " == *" $1 "* ]] || continue
      found+=("$pid")
    done
    [ "${#found[@]}" -gt 0 ] || return 0
    # Stopped first, all of them, so none forks while the others are killed.
    kill -STOP "${found[@]}" 2>/dev/null
    kill -KILL "${found[@]}" 2>/dev/null
    [ "$round" = 1 ] || sleep 0.2
  done
}
remove_account() {  # a user taken off the reservation: keys, sessions, account, files
  local uid
  rm -f -- "$ROOT/etc/ssh/authorized_keys/$1"  # no new session
  [[ $1 =~ ^gh-[a-z0-9-]{1,29}$ ]] || return 0  # only accounts this loop made
  uid=$(id -u -- "$1" 2>/dev/null) || return 0
  [[ $uid =~ ^[0-9]+$ ]] && [ "$uid" -ge 1000 ] || return 0  # never a system account
  kill_processes_of "$uid"
  userdel -r -- "$1" 2>/dev/null || deluser --remove-home "$1" 2>/dev/null
  # What it left where everyone writes, or a later account given its uid would own it.
  find "$ROOT/tmp" "$ROOT/var/tmp" "$ROOT/dev/shm" -xdev -uid "$uid" -delete 2>/dev/null
  return 0
}
apply_keys() {
  install_keys dev "$KEYS/authorized_keys"
  for file in "$KEYS"/user.*; do
    [ -e "$file" ] || continue
    account=${file##*/user.}  # gh-<login>, made by the lifecycle (collaborator_account)
    [[ $account =~ ^gh-[a-z0-9-]{1,29}$ ]] || continue
    add_account "$account"
    install_keys "$account" "$file"
  done
  for file in "$ROOT"/etc/ssh/authorized_keys/*; do  # a user removed from the reservation
    account=${file##*/}
    [ "$account" = dev ] || [ -e "$KEYS/user.$account" ] || remove_account "$account"
  done
  # An account whose removal did not finish (a process outlived the kills, so userdel
  # refused) is tried again at every pass: its key file is gone, its account is not.
  [ -r "$ROOT/etc/passwd" ] || return 0
  while IFS=: read -r account _; do
    [[ $account =~ ^gh-[a-z0-9-]{1,29}$ ]] || continue
    [ -e "$KEYS/user.$account" ] || remove_account "$account"
  done < "$ROOT/etc/passwd"
}
apply_banner() {  # the expiry warning and the pod-health warning, shown before every prompt
  local expires warning health
  expires=$(cat "$CONFIG/expires_at" 2>/dev/null)
  warning=$(cat "$CONFIG/warning_text" 2>/dev/null)
  health=$(cat "$CONFIG/health_warning" 2>/dev/null)
  if [ -n "$expires" ]; then
    printf 'This dev server expires at %s (gpu-dev extend to keep it longer).\n' "$expires"
  fi > "$RUN/expiry"
  {
    [ -n "$warning" ] && printf '%s\n' "$warning"
    [ -n "$health" ] && printf 'gpu-dev: pod health: %s\n' "$health"
    [ -s "$RUN/jupyter_failed" ] && cat "$RUN/jupyter_failed"
  } > "$RUN/banner.new"
  mv -f "$RUN/banner.new" "$RUN/banner"
}
jupyter_wanted() {  # on node 0 only: the one users connect to (its SSH Service selects it)
  [ "$(cat "$CONFIG/jupyter" 2>/dev/null)" = true ] && [ "${NODE_RANK:-0}" = 0 ]
}
ensure_jupyter() {  # the dev image has it; nothing is installed at boot (jupyter_check.sh)
  command -v jupyter-lab >/dev/null && return 0
  if [ ! -e "$RUN/jupyter_failed" ]; then
    step "Jupyter is not in this image (no jupyter-lab)"
    printf 'gpu-dev: Jupyter is not in this image %s\n' \
      '(no jupyter-lab; gpu-dev show says why; operators: see deploy/dev-image)' \
      > "$RUN/jupyter_failed"
  fi
  return 1
}
jupyter_running() {  # the Jupyter this loop started (by its pid), never a user's own
  [ -s "$RUN/jupyter.pid" ] && kill -0 "$(cat "$RUN/jupyter.pid")" 2>/dev/null
}
apply_jupyter() {
  if jupyter_wanted && ensure_jupyter; then
    # The token reaches Jupyter in dev's environment (readable by dev only), never on a
    # command line (readable by every user in the pod); its log is dev's, mode 600. It
    # listens on a Unix socket in a directory only dev may enter, reached through SSH (gpu-dev
    # connect --jupyter). Not a loopback port: a collaborator could listen on 127.0.0.1:8888
    # first and catch the owner's token through the tunnel.
    install -m 400 -o dev "$KEYS/jupyter_token" "$RUN/jupyter_token"
    install -d -m 700 -o dev "$RUN/jupyter"
    local start
    # shellcheck disable=SC2016  # $(cat ...) is expanded by dev's shell, not this one
    printf -v start 'umask 077; JUPYTER_TOKEN=$(cat %q) nohup jupyter-lab --ServerApp.sock=%q \
      --ServerApp.sock_mode=0600 --no-browser --ServerApp.root_dir=%q >~/.jupyter.log 2>&1 \
      & echo $!' "$RUN/jupyter_token" "$RUN/jupyter/jupyter.sock" "$ROOT/workspace"
    if ! jupyter_running; then
      step "starting Jupyter"
      su - dev -c "$start" > "$RUN/jupyter.pid"
    fi
  elif ! jupyter_wanted; then
    if jupyter_running; then kill "$(cat "$RUN/jupyter.pid")" 2>/dev/null; fi
    rm -f "$RUN/jupyter.pid" "$RUN/jupyter_failed"
  fi
}
apply() {
  # the entries' names too: a user with no keys taken off changes no key
  keys=$(printf '%s\n' "$KEYS"/user.*; cat "$KEYS/authorized_keys" "$KEYS"/user.* 2>/dev/null)
  if [ "$keys" != "${last_keys-}" ]; then
    apply_keys
    last_keys=$keys
  fi
  apply_jupyter
  apply_banner
  warning=$(cat "$CONFIG/warning_text" "$CONFIG/health_warning" 2>/dev/null)
  if [ "$warning" != "${last_warning-}" ]; then
    [ -n "$warning" ] && [ -n "${last_warning+set}" ] && wall "$warning" 2>/dev/null
    last_warning=$warning
  fi
}
apply
[ "${1:-}" = --watch ] || exit 0
while sleep 5; do apply; done
CONTROL
chmod 755 "$ROOT/usr/local/bin/gpu-dev-control"
step "installing the SSH keys"
"$ROOT/usr/local/bin/gpu-dev-control"  # keys in place before sshd answers (readiness)
"$ROOT/usr/local/bin/gpu-dev-control" --watch &

# sshd's host key comes from the reservation's Secret, made once by the lifecycle
# (cluster/host_keys.py), so a restarted container answers with the key the CLI pinned; a
# Secret from before host keys were kept gets the image's or fresh ones (ssh-keygen -A).
mkdir -p "$ROOT/run/sshd"
host_key=
if [ -s "$ROOT/etc/gpu-dev/keys/ssh_host_ed25519_key" ]; then
  install -m 600 -o root -g root "$ROOT/etc/gpu-dev/keys/ssh_host_ed25519_key" \
    "$ROOT/etc/ssh/ssh_host_ed25519_key"
  install -m 644 -o root -g root "$ROOT/etc/gpu-dev/keys/ssh_host_ed25519_key.pub" \
    "$ROOT/etc/ssh/ssh_host_ed25519_key.pub"
  host_key=/etc/ssh/ssh_host_ed25519_key
else
  ssh-keygen -A
fi
{
  printf 'Port 22\nPermitRootLogin no\nPasswordAuthentication no\nPubkeyAuthentication yes\n'
  printf 'AuthorizedKeysFile /etc/ssh/authorized_keys/%%u /etc/ssh/authorized_keys_nodes/%%u\n'
  printf 'UsePAM no\nX11Forwarding yes\n'
  [ -n "$host_key" ] && printf 'HostKey %s\n' "$host_key"
  [ ${#set_env[@]} -gt 0 ] && printf 'SetEnv %s\n' "${set_env[*]}"
  # scp and sftp without an sftp-server binary in the image (the tools bring none)
  [ -n "${GPU_DEV_TOOLS:-}" ] && printf 'Subsystem sftp internal-sftp\n'
} > "$ROOT/etc/ssh/sshd_config"
step "starting sshd on port 22 (ready when it prints: Server listening)"
exec "$(command -v sshd)" -D -e
