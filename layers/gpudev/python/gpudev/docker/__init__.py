"""Docker inside the dev server (`reserve --docker`, docs/images.md#docker-inside-the-dev-
server): what a request for it must be (`request.py`). The sidecar itself is a part of the pod
(cluster/pod_docker.py) and the namespace it runs in is deploy/kubernetes/namespace.yaml's
gpu-dev-docker."""
