"""Everything about the Kubernetes cluster, in its own words: the vocabulary (labels,
resource names, `Node`/`Pod`), a reservation's manifests and pod startup script, and the
clients (EKS tokens, the node/pod inventory, a reservation's objects). Only the clients
import `kubernetes`, and lazily."""
