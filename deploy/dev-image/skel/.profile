# gpu-dev default ~/.profile (copied once, on this home's first use: yours to change).
[ -n "${BASH_VERSION:-}" ] && [ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc"
