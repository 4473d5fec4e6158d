"""A reservation's pod output in CloudWatch Logs: the stream each pod's output goes to (as
the cluster's Fluent Bit names it, deploy/kubernetes/fluent-bit.yaml), the query a caller may
ask (`query.py`, pure), and the page read back for them (`service.py`, `cloudwatch.py`)."""
