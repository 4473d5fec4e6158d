"""Build scripts run from the repository (`make …`); nothing here ships in a Lambda asset."""
