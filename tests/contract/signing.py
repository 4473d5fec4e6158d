"""schemathesis hooks (`SCHEMATHESIS_HOOKS=tests.contract.signing`): every request is signed
with SigV4 as the `gpu-dev` CLI signs it (`SigV4Client.signed_headers`: botocore over the
method, the path and query as sent, and the body), as the profile `CONTRACT_PROFILE` of the
local cloud's credentials file. The media type schemathesis chose is signed with the rest;
a request without one gets the CLI's (application/json)."""

from __future__ import annotations

import os
from pathlib import Path

import requests
import schemathesis

from tests.support.api import ApiClient


class SignedAsTheCli(requests.auth.AuthBase):
    def __init__(self, api: ApiClient, profile: str) -> None:
        self.api_url = api.api_url.rstrip("/")
        self.client = api.as_profile(profile)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        url = request.url or ""
        assert url.startswith(self.api_url), url
        body = request.body.encode() if isinstance(request.body, str) else request.body
        content_type = request.headers.get("Content-Type")
        signed = self.client.signed_headers(
            request.method or "GET",
            url[len(self.api_url) :],
            body,
            extra_headers={"Content-Type": content_type} if content_type else None,
        )
        request.headers.update(signed)
        return request


def _from_environment() -> SignedAsTheCli:
    api = ApiClient(
        os.environ["CONTRACT_API_URL"],
        os.environ["CONTRACT_REGION"],
        Path(os.environ["CONTRACT_CREDENTIALS_FILE"]),
    )
    return SignedAsTheCli(api, os.environ["CONTRACT_PROFILE"])


schemathesis.auth.set_from_requests(_from_environment())
