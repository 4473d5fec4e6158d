"""Dev-server images: the reference a user asks for (`reference.py`), whether the operator
allows it and where the nodes pull it from (`allowlist.py`), and its digest, read from ECR
at submit (`resolve.py`); what `--preserve-entrypoint` goes with (`entrypoint.py`). Images
built from a Dockerfile are image_builds/'s (it reads rows: a floor above this one)."""
