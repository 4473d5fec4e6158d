"""The personal network file system: each user's EFS access point (docs/shared-files.md)."""
