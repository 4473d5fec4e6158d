"""Images built from a Dockerfile (docs/images.md#built-images): the build service over
CodeBuild, S3 and ECR (`builds.py`), the image routes' services (`requests.py`) and their
models (`schemas.py`). Its rows are repositories/image_builds.py's."""
