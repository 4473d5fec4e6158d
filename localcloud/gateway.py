"""The local API Gateway: a REST API with AWS_IAM auth in front of our API function.

Every request but the public routes (`GET /health`) must carry a valid SigV4 (`execute-api`)
signature of a key the local IAM knows, over the body as received; another method on a public
route's path is refused as API Gateway refuses a method its resource lacks, and a body over
the 10 MB payload quota is 413. Its refusals are `{"message": ...}`, API Gateway's default
gateway responses, the shape the API's own errors share. The API function
then runs in-process with a REST API proxy event whose `requestContext.identity` names the
caller, as API Gateway would pass it. The function runs in the cloud's process
(`LocalLambda`), or in execution environments of their own (`ProcessEnvironments`,
`--api-processes`); either way a failed invocation is API Gateway's 502.

The deployed API's `ANY /{proxy+}` method (cdk_app/api.py) takes every method API Gateway
knows, HEAD and OPTIONS included (no CORS preflight is configured), and passes them to the
function, which answers them as it answers any method a path lacks (405 with `Allow`). So
does this gateway; a HEAD's answer has no body, as API Gateway sends it.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from cdk_app.declaration import ApiSpec
from localcloud.http import HttpService, LocalHttpServer, RawRequest, Reply
from localcloud.lambdas import ACCOUNT_ID, Invoker
from localcloud.sigv4 import MISSING_TOKEN, Rejection, SigningKey, verify

log = logging.getLogger("localcloud.gateway")
STAGE = "local"
MAX_BODY_BYTES = 10 * 1024 * 1024  # a REST API's payload quota; larger: 413 before anything


def proxy_event(
    method: str,
    raw_path: str,
    headers: dict[str, str],
    body: bytes,
    key: SigningKey | None,
    source_ip: str,
) -> dict[str, Any]:
    """A REST API (v1) proxy integration event, as API Gateway sends it to Lambda."""
    split = urlsplit(raw_path)
    query = parse_qs(split.query, keep_blank_values=True)
    path = unquote(split.path)
    try:
        text, is_base64 = body.decode(), False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode(), True
    identity: dict[str, Any] = {
        "sourceIp": source_ip,
        "userAgent": headers.get("User-Agent"),
        "accountId": key.account_id if key else None,
        "accessKey": key.access_key_id if key else None,
        "caller": key.user_id if key else None,
        "user": key.user_id if key else None,
        "userArn": key.principal_arn if key else None,
        "cognitoIdentityId": None,
        "cognitoIdentityPoolId": None,
        "cognitoAuthenticationType": None,
        "cognitoAuthenticationProvider": None,
        # No API keys, mutual TLS or AWS Organizations locally.
        "apiKey": None,
        "apiKeyId": None,
        "principalOrgId": None,
        "clientCert": None,
    }
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "accountId": ACCOUNT_ID,
            "apiId": "local",
            "identity": identity,
        },
        "body": text or None,
        "isBase64Encoded": is_base64,
    }


class LocalApiGateway(HttpService):
    def __init__(
        self,
        api: ApiSpec,
        lambdas: Invoker,
        lookup_key: Callable[[str], SigningKey | None],
        region: str,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.api = api
        self.lambdas = lambdas
        self.lookup_key = lookup_key
        self.region = region
        # API Gateway's ANY: every method reaches `_handle`, which answers as API Gateway does.
        self._server = LocalHttpServer(self._handle, "api-gateway", port, any_method=True)

    def _handle(self, request: RawRequest) -> Reply:
        return self.handle(
            request.method, request.raw_path, request.headers, request.body, request.source_ip
        )

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes, source_ip: str
    ) -> Reply:
        path = unquote(urlsplit(raw_path).path)
        if len(body) > MAX_BODY_BYTES:
            log.info("413 %s %s: %d bytes", method, path, len(body))
            return 413, {}, json.dumps({"message": "Request Too Long"}).encode()
        key = None
        if method not in ANY_METHODS:
            # No resource has a method outside ANY's (TRACE, CONNECT, ...): API Gateway's
            # answer to a method a resource lacks.
            return _refused(method, path, MISSING_TOKEN)
        if path in self.api.public_paths:
            # The public route's own resource: only its public methods exist there.
            if method not in self.api.public_methods(path):
                return _refused(method, path, MISSING_TOKEN)
        else:
            try:
                key = verify(
                    method=method,
                    raw_path=raw_path,
                    headers=headers,
                    body=body,
                    region=self.region,
                    lookup_key=self.lookup_key,
                )
            except Rejection as rejection:
                return _refused(method, path, rejection)
        event = proxy_event(method, raw_path, headers, body, key, source_ip)
        invocation = self.lambdas.invoke(self.api.function, event)
        if invocation.errored or not isinstance(invocation.payload, dict):
            log.error("API function failed: %s", invocation.payload)
            return 502, {}, json.dumps({"message": "Internal server error"}).encode()
        response = invocation.payload
        out_headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
        for name, values in (response.get("multiValueHeaders") or {}).items():
            out_headers[name] = ",".join(str(v) for v in values)
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
        if method == "HEAD":
            data = b""
        who = key.principal_arn if key else "anonymous"
        log.info("%s %s %s -> %s", who, method, path, response.get("statusCode"))
        return int(response.get("statusCode", 200)), out_headers, data


ANY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")  # API Gateway's ANY


def _refused(method: str, path: str, rejection: Rejection) -> Reply:
    """API Gateway's 403: the error type in `x-amzn-ErrorType`, the message in the body."""
    log.info("403 %s %s: %s", method, path, rejection.error_type)
    return (
        403,
        {"x-amzn-ErrorType": rejection.error_type},
        json.dumps({"message": rejection.message}).encode(),
    )
