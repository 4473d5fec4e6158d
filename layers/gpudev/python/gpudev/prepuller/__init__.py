"""The image pre-puller (issue #33 item 5; docs/images.md, "Pre-pulled images"): a DaemonSet
on the GPU nodes (deploy/kubernetes/prepuller/) pulls the default image and the most used
images of the last days, so a reservation's pod finds its image on the node. `plan.py`
decides (the list, the DaemonSet's pod template, whether it changed); `service.py` reads the
database and the DaemonSet and patches it, once, only when the list changed."""
