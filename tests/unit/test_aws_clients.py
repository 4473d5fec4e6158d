"""The one place AWS clients are made (gpudev/aws.py): what a service needs besides."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from gpudev.aws import AwsClients


@pytest.mark.parametrize("region", ["us-east-1", "us-east-2", "us-west-2"])
def test_a_presigned_upload_signs_its_size(region):
    """SigV4 signs Content-Length, so S3 refuses an upload of any other size; botocore's
    default presigns some regions' PUTs with SigV2, which signs no length."""
    session = boto3.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=region
    )
    url = AwsClients(session, region).s3.generate_presigned_url(
        "put_object",
        Params={"Bucket": "contexts", "Key": "a.tar", "ContentLength": 10},
        ExpiresIn=60,
    )
    query = parse_qs(urlsplit(url).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert "content-length" in query["X-Amz-SignedHeaders"][0].split(";")
