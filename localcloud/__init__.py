"""The local cloud: the whole stack on one machine (see docs/architecture.md)."""
