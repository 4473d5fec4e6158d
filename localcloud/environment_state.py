"""Per-environment copies of the process-wide state libraries keep, for the local Lambda.

In Lambda every execution environment is its own process, so whatever a library keeps at
module or class level belongs to one environment. The local cloud runs all environments in
one interpreter, with each library imported once, so such state is shared by environments
running at the same moment, which production never does.

powertools' API Gateway resolvers keep the request being resolved on their base class, not
on the resolver: `resolve()` assigns `BaseRouter.current_event` and
`BaseRouter.lambda_context` (aws_lambda_powertools 3.x, event_handler/api_gateway.py), and
routes, `Request` objects and dependencies read them back from there. Two API environments
resolving at once here read whichever event was assigned last: alice's `GET /v1/me` was
answered as bob (tests/unit/test_local_lambda_environments.py makes that interleaving
certain).

Each environment gets a `contextvars.Context` of its own (`new_environment_context`) and
runs its load and every invocation in it; the two attributes become context variables, so
each environment sees its own, from one invocation to the next as in its own process. A
context refuses to be entered twice at once, so an environment running two invocations at
once fails loudly instead of sharing. Context variables set by the layer (powertools
Logger's thread-safe keys) are per environment the same way.
"""

from __future__ import annotations

import contextvars
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

_UNSET: Any = object()
PER_ENVIRONMENT_ATTRIBUTES = ("current_event", "lambda_context")


class _PerEnvironment:
    """A class attribute whose value lives in the running environment's context: the same
    descriptor serves reads and writes on the class (from its metaclass) and on instances."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._value: contextvars.ContextVar[Any] = contextvars.ContextVar(
            f"powertools BaseRouter.{name}"
        )

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        value = self._value.get(_UNSET)
        if value is _UNSET:  # as before any resolve(): the class had no such attribute
            raise AttributeError(self._name)
        return value

    def __set__(self, instance: object, value: Any) -> None:
        self._value.set(value)


def _install() -> None:
    """Once per process: `BaseRouter.x = ...` is an assignment on the class, which only a
    descriptor on its metaclass sees, so BaseRouter gets a metaclass that has them."""
    meta = type(BaseRouter)
    if getattr(meta, "per_environment", False):
        return
    descriptors = {name: _PerEnvironment(name) for name in PER_ENVIRONMENT_ATTRIBUTES}
    for name, descriptor in descriptors.items():
        type.__setattr__(BaseRouter, name, descriptor)  # instances' reads and writes
    per_environment_meta = type(
        f"PerEnvironment{meta.__name__}",
        (meta,),
        {"per_environment": True, "__slots__": (), **descriptors},
    )
    BaseRouter.__class__ = per_environment_meta  # type: ignore[method-assign]


def new_environment_context() -> contextvars.Context:
    """The context a new execution environment loads and runs its invocations in: empty,
    as a new process's is."""
    _install()
    return contextvars.Context()
