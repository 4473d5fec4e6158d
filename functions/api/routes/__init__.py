"""The API's routes, one powertools `Router` per area, and what they share: the caller
dependency (`caller.py`) and the one map from errors to HTTP statuses (`errors.py`)."""
