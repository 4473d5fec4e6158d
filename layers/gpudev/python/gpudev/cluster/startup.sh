#!/bin/bash
# The dev pod's startup script: the container's command (`bash -c`, the pod manifest in
# objects.py). It runs as root: makes the `dev` user, installs the control loop that
# applies the reservation's mounted ConfigMap and Secret (SSH keys, warnings, Jupyter), then
# becomes sshd. Checked by tests/unit/test_startup_script.py (bash -n, shellcheck).
set -u
id dev >/dev/null 2>&1 || useradd -m -u 1081 -s /bin/bash dev 2>/dev/null || adduser -D -u 1081 dev
mkdir -p /workspace/.cache/huggingface && chown -R dev /workspace /home/dev
# A named disk at /home/dev keeps its files between reservations: the default dotfiles go
# in once, on its first use, marked by a file the snapshot keeps. Done as dev, never as
# root: dev owns /home/dev, so root would follow any symlink dev left there (the marker
# included, dangling or not). A marker that exists in any form means initialized.
# shellcheck disable=SC2016  # expanded by dev's shell (GPU_DEV_RESERVATION_ID is inherited)
su dev -s /bin/sh -c '[ -e "$HOME/.gpu-dev-initialized" ] || [ -L "$HOME/.gpu-dev-initialized" ] \
  || { cp -rn /etc/skel/. "$HOME/" 2>/dev/null; \
       echo "${GPU_DEV_RESERVATION_ID:-}" > "$HOME/.gpu-dev-initialized"; }'
install -d -m 755 /etc/ssh/authorized_keys /run/gpu-dev  # root's: no user can redirect writes
if [ "${GPU_DEV_PROFILING:-false}" = true ]; then  # CAP_SYS_ADMIN is root's: dev may sudo
  command -v sudo >/dev/null || (apt-get update -qq && apt-get install -y -qq sudo)
  mkdir -p /etc/sudoers.d && echo 'dev ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/dev
  chmod 440 /etc/sudoers.d/dev
fi
cat > /usr/local/bin/gpu-dev-control <<'CONTROL'
#!/bin/bash
# Applies the reservation's mounted ConfigMap and Secret: SSH keys, warnings, Jupyter.
# Keys live in /etc/ssh/authorized_keys/<account> (sshd's AuthorizedKeysFile), a directory
# only root writes: nothing a user does in a home directory can redirect these writes.
install_keys() {  # account, keys file
  install -m 644 -o root -g root "$2" "/etc/ssh/authorized_keys/$1.new" \
    && mv -f "/etc/ssh/authorized_keys/$1.new" "/etc/ssh/authorized_keys/$1"
}
last_keys="" last_warning=""
while true; do
  keys=$(cat /etc/gpu-dev/keys/authorized_keys /etc/gpu-dev/keys/user.* 2>/dev/null)
  if [ "$keys" != "$last_keys" ]; then
    install_keys dev /etc/gpu-dev/keys/authorized_keys
    for file in /etc/gpu-dev/keys/user.*; do
      [ -e "$file" ] || continue
      account=${file##*/user.}  # gh-<login>, made by the lifecycle (collaborator_account)
      [[ $account =~ ^gh-[a-z0-9-]{1,29}$ ]] || continue
      id -- "$account" >/dev/null 2>&1 || useradd -m -s /bin/bash -- "$account" 2>/dev/null \
        || adduser -D "$account"
      install_keys "$account" "$file"
    done
    for file in /etc/ssh/authorized_keys/*; do  # a user removed from the reservation
      account=${file##*/}
      [ "$account" = dev ] || [ -e "/etc/gpu-dev/keys/user.$account" ] || rm -f -- "$file"
    done
    last_keys=$keys
  fi
  warning=$(cat /etc/gpu-dev/control/warning_text 2>/dev/null)
  if [ "$warning" != "$last_warning" ]; then
    printf '%s\n' "$warning" > /etc/gpu-dev-warning
    [ -n "$warning" ] && wall "$warning" 2>/dev/null
    last_warning=$warning
  fi
  if [ "$(cat /etc/gpu-dev/control/jupyter 2>/dev/null)" = "true" ]; then
    # The token reaches Jupyter in dev's environment (readable by dev only), never on a
    # command line (readable by every user in the pod); its log is dev's, mode 600.
    install -m 400 -o dev /etc/gpu-dev/keys/jupyter_token /run/gpu-dev/jupyter_token
    # shellcheck disable=SC2016  # the token is expanded by dev's shell, not this one
    pgrep -f jupyter-lab >/dev/null || su - dev -c 'umask 077; \
      JUPYTER_TOKEN=$(cat /run/gpu-dev/jupyter_token) nohup jupyter-lab --ip=0.0.0.0 \
      --port=8888 --no-browser --ServerApp.root_dir=/workspace >~/.jupyter.log 2>&1 &'
  else
    pkill -f jupyter-lab 2>/dev/null
  fi
  sleep 5
done
CONTROL
chmod 755 /usr/local/bin/gpu-dev-control
echo '[ -s /etc/gpu-dev-warning ] && cat /etc/gpu-dev-warning' > /etc/profile.d/gpu-dev.sh
/usr/local/bin/gpu-dev-control &
command -v sshd >/dev/null || (apt-get update -qq && apt-get install -y -qq openssh-server)
mkdir -p /run/sshd && ssh-keygen -A
printf 'Port 22\nPermitRootLogin no\nPasswordAuthentication no\nPubkeyAuthentication yes\n' \
  > /etc/ssh/sshd_config
printf 'AuthorizedKeysFile /etc/ssh/authorized_keys/%%u\nUsePAM no\nX11Forwarding yes\n' \
  >> /etc/ssh/sshd_config
echo "SSH daemon starting on port 22"
exec /usr/sbin/sshd -D -e
