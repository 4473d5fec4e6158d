"""A Kubernetes API stand-in and a simulated EKS cluster (see docs/architecture.md)."""
