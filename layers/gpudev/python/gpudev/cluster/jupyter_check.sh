#!/bin/bash
# The Jupyter check: the command of node 0's init container (objects.py), run from the pod's
# own image (no extra pull) with the dev container's environment (its PATH) before the dev
# container starts. It says whether the image can serve Jupyter, as one line in the
# container's termination message, which the control plane reads with the pod
# (cluster/jupyter_verdict.py): `jupyter=available`, or `jupyter=unavailable: <why>`.
# It installs nothing: the dev image (deploy/dev-image) has Jupyter baked in.
#
# Shell builtins only (the Kubernetes stand-in runs it with the image's commands on PATH and
# nothing else); GPU_DEV_ROOT (unset in pods) roots the file it writes, for the tests.
ROOT=${GPU_DEV_ROOT:-}
ROOT=${ROOT%/}
if command -v jupyter-lab >/dev/null; then
  verdict='jupyter=available'
else
  verdict="jupyter=unavailable: no jupyter-lab on PATH (${PATH:-})"
fi
printf '%s\n' "$verdict" > "$ROOT/dev/termination-log"
printf '%s\n' "$verdict"
