"""The Kubernetes API stand-in: the served kinds (resources.py) on 127.0.0.1, over HTTPS
in the local cloud (plain HTTP only for a bare server in tests and benches), for the
official client and kubectl.

This module routes; the protocol lives beside it, one concern each: bodies by content type
(request_body.py), dryRun (dry_run.py), discovery (discovery.py), server-side tables
(tables.py), OpenAPI and strict field validation (openapi.py), TLS (tls.py).

Every request is authenticated as EKS authenticates it (`authentication.py`: the presigned
STS token verified, the principal mapped by the cluster's access entries; 401 otherwise) and
then authorized (`authorization.py`: EKS access policies and RBAC; 403 otherwise), before it
is routed; a write of a role or binding must not grant what its writer does not hold
(`escalation.py`). Errors are Status objects with the real API server's codes. `faults` injects
failures for reliability tests.
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from localcloud.http import HttpService, LocalHttpServer, RawRequest, Reply
from localcloud.kubernetes import discovery, dry_run, openapi, patches, request_body, tables
from localcloud.kubernetes.authentication import Authenticator
from localcloud.kubernetes.authorization import Authorizer, request_attributes
from localcloud.kubernetes.container_logs import ContainerLogs, LogOptions
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.escalation import EscalationCheck
from localcloud.kubernetes.pod_deletion import DeleteOptions
from localcloud.kubernetes.request_body import Body
from localcloud.kubernetes.resources import CREATE_ONLY, KINDS, api_version
from localcloud.kubernetes.selectors import SelectorError
from localcloud.kubernetes.store import ObjectStore

log = logging.getLogger("localcloud.kubernetes")
_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[a-z0-9.-]+/v1))/"
    r"(?:namespaces/(?P<ns>[^/]+)/)?(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|binding|log))?$"
)


def _check_log_route(method: str, resource: str) -> None:
    """pods/log exists for pods and GET only: kube-apiserver answers any other method 405
    from its routes, before it reads a body (whose content type then does not matter)."""
    if resource != "pods":
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if method != "GET":
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )


class Faults:
    """Failure injection for reliability tests: fail the next N requests of a verb on a
    resource with 500, slow one verb on one resource down, or slow every response.

    Verbs are the client's: create, get, list, replace, patch, delete, deletecollection;
    resources are the URL's (`pods`, `configmaps`, or a subresource: `pods/status`).
    The simulated scheduler and kubelet work on the store directly and are never affected."""

    VERBS = frozenset({"create", "get", "list", "replace", "patch", "delete", "deletecollection"})

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], int] = {}  # (verb, resource) -> left to fail
        self._delays: dict[tuple[str, str], float] = {}  # (verb, resource) -> seconds
        self.delay_seconds = 0.0  # every response
        self._outage_until = 0.0  # time.monotonic(): every request answered 503 until then

    def outage(self, seconds: float) -> None:
        """The control plane unavailable (an EKS upgrade, a failed-over endpoint): every
        request answered 503 ServiceUnavailable for `seconds` (0 ends an outage)."""
        with self._lock:
            self._outage_until = time.monotonic() + seconds if seconds > 0 else 0.0

    def outage_left(self) -> float:
        return max(0.0, self._outage_until - time.monotonic()) if self._outage_until else 0.0

    def check_outage(self) -> None:
        if self._outage_until and time.monotonic() < self._outage_until:
            raise ApiError(
                503, "ServiceUnavailable", "the server is currently unable to handle the request"
            )

    def _check(self, verb: str) -> None:
        if verb not in self.VERBS:
            raise ValueError(f"unknown verb {verb!r}; one of {sorted(self.VERBS)}")

    def fail_next(self, verb: str, resource: str, count: int = 1) -> None:
        self._check(verb)
        with self._lock:
            self._failures[verb, resource] = count

    def delay(self, verb: str, resource: str, seconds: float) -> None:
        self._check(verb)
        with self._lock:
            self._delays[verb, resource] = seconds

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()
            self._outage_until = 0.0
        self.delay_seconds = 0.0

    def apply(self, verb: str, resource: str) -> None:
        """Before a request is served: sleep as configured, then fail it if one is due."""
        with self._lock:
            pause = self._delays.get((verb, resource), 0.0)
            failing = self._failures.get((verb, resource), 0) > 0
            if failing:
                self._failures[verb, resource] -= 1
        if pause:
            time.sleep(pause)
        if failing:
            raise ApiError(500, "InternalError", f"injected fault: {verb} {resource} failed")


_VERBS = {  # (method, names one object) -> the verb faults are keyed by
    ("GET", False): "list",
    ("POST", False): "create",
    ("DELETE", False): "deletecollection",
    ("GET", True): "get",
    ("POST", True): "create",  # pods/binding
    ("PUT", True): "replace",
    ("PATCH", True): "patch",
    ("DELETE", True): "delete",
}


def delete_options(query: dict[str, str], body: Any) -> DeleteOptions:
    """DeleteOptions from the body (where the official client puts them) or the query."""
    options = body if isinstance(body, dict) else {}
    grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    try:
        seconds = None if grace is None else int(grace)
    except (TypeError, ValueError):
        raise ApiError(400, "BadRequest", f"gracePeriodSeconds: invalid value {grace!r}") from None
    preconditions = options.get("preconditions") or {}
    return DeleteOptions(seconds, preconditions.get("uid"), preconditions.get("resourceVersion"))


class KubernetesApiServer(HttpService):
    def __init__(
        self,
        store: ObjectStore,
        authenticator: Authenticator,
        port: int = 0,
        container_logs: ContainerLogs | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        self.store = store
        self.container_logs = container_logs or ContainerLogs()  # the kubelets' (pods/log)
        self.faults = Faults()
        self.authenticator = authenticator
        self.authorizer = Authorizer(store)
        self.escalation = EscalationCheck(store, self.authorizer)
        self.cluster_name = authenticator.cluster_name
        # HTTPS as EKS serves it (the local cloud's); plain HTTP only for tests and benches
        # that build the server on its own.
        self._server = LocalHttpServer(self._handle, "kubernetes-api", port, tls)
        self.requests = 0

    def _handle(self, request: RawRequest) -> Reply:
        status, payload, warnings = self.serve(
            request.method, request.raw_path, request.headers, request.body
        )
        if isinstance(payload, bytes):  # pods/log
            return status, {"Content-Type": "text/plain"}, payload
        # kube-apiserver's warnings (RFC 7234 form, code 299), which kubectl prints.
        headers = {"Warning": ", ".join(f"299 - {json.dumps(w)}" for w in warnings)}
        return status, headers if warnings else {}, json.dumps(payload).encode()

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        """The answer to one request, status and body (warnings dropped)."""
        status, payload, _ = self.serve(method, raw_path, headers, body)
        return status, payload

    def serve(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, list[str]]:
        """The answer to one request: status, body and the warnings to send with it."""
        warnings: list[str] = []
        status, payload = self._answer(method, raw_path, headers, body, warnings)
        return status, payload, warnings

    def _answer(
        self,
        method: str,
        raw_path: str,
        headers: dict[str, str],
        body: bytes,
        warnings: list[str],
    ) -> tuple[int, Any]:
        self.requests += 1
        if self.faults.delay_seconds:
            time.sleep(self.faults.delay_seconds)
        split = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        try:
            self.faults.check_outage()
            authorization = next(
                (v for k, v in headers.items() if k.lower() == "authorization"), None
            )
            user = self.authenticator.authenticate(authorization)
            self.authorizer.authorize(user, request_attributes(method, split.path, query))
            if split.path in ("/version", "/version/"):
                return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-gpudev-local"}
            found = discovery.answer(split.path)
            if found is None and method == "GET":
                found = openapi.answer(split.path)
            if found is not None:
                return 200, found
            match = _PATH.match(split.path)
            if (
                not match
                or match["resource"] not in KINDS
                or api_version(match["resource"]) != (match["core"] or match["group"])
            ):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if query.get("watch") in ("true", "1"):
                raise ApiError(400, "BadRequest", "watch is not supported by the local stand-in")
            if match["sub"] == "log":
                _check_log_route(method, match["resource"])
            decoded = request_body.decode(method, headers, body)
            if match["resource"] in CREATE_ONLY:
                if method != "POST" or match["name"] or match["ns"]:
                    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")
                return 201, self.authorizer.review(user, match["resource"], decoded.value)
            openapi.check_types(method, match["resource"], decoded)
            if method == "PATCH" and decoded.patch_type == "json" and match["name"]:
                current = self.store.get(match["resource"], match["ns"] or "", match["name"])
                patched = patches.apply(current, decoded.value, decoded.patch_type)
                openapi.check_json_patch_result(match["resource"], patched)
            warnings += openapi.check_fields(method, match["resource"], decoded, query)
            if not match["sub"]:  # RBAC writes grant only what the caller holds
                self.escalation.confirm(
                    user, method, match["resource"], match["ns"] or "", match["name"], decoded
                )
            dry = dry_run.requested(method, query, decoded.value)
            with dry_run.maybe(self.store, dry):
                status, payload = self._dispatch(method, match, query, decoded)
            if dry:
                dry_run.keep_versions(self.store, match["resource"], payload)
            accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
            if method == "GET" and tables.wants_table(accept):
                return status, tables.table(match["resource"], payload, query.get("includeObject"))
            return status, payload
        except ApiError as error:
            return error.code, error.status()
        except SelectorError as error:
            return 400, ApiError(400, "BadRequest", str(error)).status()
        except Exception:
            # A body of a shape the stand-in did not foresee: answered, as kube-apiserver
            # answers its own panics, never a connection closed in silence.
            log.exception("%s %s failed", method, split.path)
            return 500, ApiError(500, "InternalError", "an error on the server").status()

    def _dispatch(
        self, method: str, match: re.Match[str], query: dict[str, str], decoded: Body
    ) -> tuple[int, Any]:
        resource, name, sub = match["resource"], match["name"], match["sub"]
        body = decoded.value
        namespace = match["ns"] or ""
        store = self.store
        verb = _VERBS.get((method, name is not None))
        if verb:
            self.faults.apply(verb, f"{resource}/{sub}" if sub else resource)
        if name is None:
            scope = match["ns"] if KINDS[resource][1] else None
            if method == "GET":
                listed = store.list(
                    resource,
                    scope,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                    frozen=True,  # read-only, straight to JSON: no copies
                )
                # kube-apiserver leaves `kind` and `apiVersion` out of a list's items (the
                # list itself carries them): code that writes a listed object back must set
                # them, as it must against a real cluster.
                listed["items"] = [
                    {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}
                    for item in listed["items"]
                ]
                return 200, listed
            if method == "POST":
                return 201, store.create(resource, namespace, body or {})
            if method == "DELETE":
                return 200, store.delete_collection(
                    resource,
                    scope,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                    delete_options(query, body),
                )
        elif sub == "log":  # pods/log: GET only, text/plain (container_logs.py)
            pod = store.get("pods", namespace, name, frozen=True)
            return 200, self.container_logs.read(pod, LogOptions.from_query(name, query))
        elif sub == "binding" and method == "POST":
            store.bind(namespace, name, (body or {}).get("target", {}).get("name", ""))
            return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
        elif method == "GET":
            return 200, store.get(resource, namespace, name, frozen=True)  # straight to JSON
        elif method == "PUT":
            return 200, store.replace(resource, namespace, name, body or {}, sub)
        elif method == "PATCH":
            return 200, store.patch(resource, namespace, name, body, sub, decoded.patch_type)
        elif method == "DELETE":
            return 200, store.delete(resource, namespace, name, delete_options(query, body))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")
