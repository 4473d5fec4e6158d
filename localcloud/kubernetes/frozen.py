"""The stand-in's stored objects are frozen: read-only dicts and lists, so the store may
hand them out without copying (the simulated cluster lists hundreds of pods 20 times a
second) and a reader that tries to change one fails at once instead of changing the store
behind its back. A writer thaws an object (a plain, private deep copy), changes that, and
stores it frozen again.

Objects are JSON-shaped: dicts with string keys, lists, str/int/float/bool/None. A frozen
dict or list is a `dict`/`list` subclass, so reading, comparing and JSON encoding work as
for plain ones; `copy.deepcopy` of one (and `thaw`) gives plain, mutable containers.

The refusal is Python-level: C code that bypasses the methods (`dict.__init__` called again
on a frozen dict, `heapq` on a frozen list) is not stopped, and YAML dumpers that check for
exact `dict` types refuse these; nothing here does either."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

SCALARS = (str, int, float, bool, type(None))


def _refuse(self: object, *_args: object, **_kwargs: object) -> NoReturn:
    raise TypeError(
        f"a stored object is read-only ({type(self).__name__}): thaw it (a copy) to change it"
    )


class FrozenDict(dict[str, Any]):
    """A dict that refuses every change. Build one with `freeze`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, _memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return dict, (thaw(self),)


class FrozenList(list[Any]):
    """A list that refuses every change. Build one with `freeze`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, _memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return list, (thaw(self),)


def freeze(value: Any) -> Any:
    """`value` as read-only containers; frozen parts are shared, not copied (nothing can
    change them). A value JSON cannot hold is refused (TypeError)."""
    kind = type(value)
    if kind is FrozenDict or kind is FrozenList or isinstance(value, SCALARS):
        return value
    if isinstance(value, dict):
        return FrozenDict({_key(key): freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList([freeze(item) for item in value])
    raise TypeError(f"a stored object holds only JSON values, not {kind.__name__}: {value!r}")


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a JSON-shaped value (frozen or not)."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a stored object's keys are strings, not {type(key).__name__}: {key!r}")
    return key
