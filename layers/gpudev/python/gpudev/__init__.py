"""gpu-dev shared Lambda layer: settings, database, AWS and cluster access, domain services."""
