"""The stand-in's objects by key (resource, namespace, name), indexed by resource kind.

One mapping owns both the objects and the index, and every change goes through its
`__setitem__`/`__delitem__` (MutableMapping derives pop, setdefault, update and clear from
them), so no write site can leave the index out of step. A LIST of one kind then touches only
that kind's objects, not every object of every kind: the simulated cluster lists pods and
nodes several times per tick while hundreds of Services, ConfigMaps, Secrets and
NetworkPolicies sit beside them.

What it stores is frozen (`frozen.py`): `__setitem__` keeps a read-only copy of the object
it is given, so a stored object never changes and may be read without copying."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, ValuesView
from typing import Any

from localcloud.kubernetes.frozen import freeze

Key = tuple[str, str, str]  # (resource, namespace or "" when cluster-scoped, name)
Obj = dict[str, Any]


class ObjectsByKind(MutableMapping[Key, Obj]):
    def __init__(self) -> None:
        self._all: dict[Key, Obj] = {}
        self._by_kind: dict[str, dict[Key, Obj]] = {}

    def __getitem__(self, key: Key) -> Obj:
        return self._all[key]

    def __setitem__(self, key: Key, obj: Obj) -> None:
        frozen = freeze(obj)
        self._all[key] = frozen
        self._by_kind.setdefault(key[0], {})[key] = frozen

    def __delitem__(self, key: Key) -> None:
        del self._all[key]
        of_kind = self._by_kind[key[0]]
        del of_kind[key]
        if not of_kind:
            del self._by_kind[key[0]]

    def __contains__(self, key: object) -> bool:
        return key in self._all

    def __iter__(self) -> Iterator[Key]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def snapshot(self) -> tuple[dict[Key, Obj], dict[str, dict[Key, Obj]]]:
        """The mapping as it is (the objects are frozen: copying the dicts is enough)."""
        return dict(self._all), {kind: dict(of) for kind, of in self._by_kind.items()}

    def restore(self, snapshot: tuple[dict[Key, Obj], dict[str, dict[Key, Obj]]]) -> None:
        self._all, self._by_kind = snapshot

    def of_kind(self, resource: str) -> list[tuple[Key, Obj]]:
        """The objects of one resource kind, sorted by key (namespace, then name)."""
        return sorted(self._by_kind.get(resource, {}).items())

    def values_of_kind(self, resource: str) -> ValuesView[Obj]:
        """The objects of one resource kind, in the order they were first stored (a live
        view: do not store while iterating it)."""
        return self._by_kind.get(resource, {}).values()
