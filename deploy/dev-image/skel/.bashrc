# gpu-dev default ~/.bashrc (copied once, on this home's first use: yours to change).
# The pod's environment (conda, CUDA, NCCL, HF_HOME, threads, torchrun variables) comes from
# /etc/profile.d/gpu-dev-env.sh; the reservation's banner from /etc/profile.d/gpu-dev.sh.
[ -z "${PS1:-}" ] && return

HISTSIZE=100000
HISTFILESIZE=200000
HISTCONTROL=ignoredups:erasedups
shopt -s histappend checkwinsize

PS1='\[\e[1;32m\]\u@\h\[\e[0m\]:\[\e[1;34m\]\w\[\e[0m\]\$ '
alias ll='ls -la'
alias gpus='nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total --format=csv'

[ -r /etc/profile.d/gpu-dev.sh ] && . /etc/profile.d/gpu-dev.sh
