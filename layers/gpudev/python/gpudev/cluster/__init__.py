"""EKS access: bearer tokens and Kubernetes API clients. Imports `kubernetes` lazily."""
