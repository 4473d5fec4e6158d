"""Validation failures of a request's body, path or query (pydantic's error records, as
powertools' RequestValidationError carries them) as sentences a user can act on: what was
wrong, what was given (cut short), what is allowed. Pure: routes/errors.py makes the body."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpudev.errors import shown
from gpudev.reservations.rules import HOURS_ALLOWED, MIN_HOURS, MIN_MINUTES
from routes.params import ISO_8601

MAX_SENTENCES = 3  # the rest are counted, not spelled out
NOT_EMPTY = "not empty"

# What a user calls each field, and what it allows, where more can be said than its bounds.
LABELS = {
    "gpu_type": "the GPU type",
    "gpu_count": "the GPU count",
    "disk_name": "the disk name",
    "github_user": "the GitHub user",
    "github_username": "the GitHub username",
    "client_request_id": "the client request id",
    "size_gb": "the disk size",
    "new_name": "the new name",
    "reservation_id": "the reservation id",
}
ALLOWED = {
    "hours": HOURS_ALLOWED,
    "gpu_count": "0 to 64, a count the GPU type accepts (`gpu-dev avail` lists them)",
    "gpu_type": "a type `gpu-dev avail` lists, e.g. h100, t4, cpu-x86",
    "name": "at most 63 characters",
    "disk_name": "1-50 letters, digits, '-' or '_'",
    "new_name": "1-50 letters, digits, '-' or '_'",
    "github_user": "1-39 letters, digits or single inner hyphens",
    "github_username": "1-39 letters, digits or single inner hyphens",
    "size_gb": "1 to 16384 GB",
    "since": ISO_8601,
    "until": ISO_8601,
    "reservation_id": "a reservation id, or its first 8 or more characters (hex digits, '-')",
}


def _hours(value: Any) -> str:
    if value == MIN_HOURS:
        return f"{MIN_MINUTES} minutes ({MIN_HOURS} h)"
    return f"{value:g} hours"


UNITS: dict[str, Callable[[Any], str]] = {
    "hours": _hours,
    "gpu_count": lambda v: f"{v} GPUs",
    "size_gb": lambda v: f"{v} GB",
}


@dataclass(frozen=True)
class Problem:
    message: str
    field: str | None
    allowed: str | None


def _field(loc: Sequence[Any]) -> str | None:
    parts = [str(p) for p in loc[1:] if not isinstance(p, int)]  # loc[0]: body/query/path
    return ".".join(parts) or None


def _bound(field: str | None, value: Any) -> str:
    unit = UNITS.get(field or "")
    return unit(value) if unit else str(value)


def _characters(count: int) -> str:
    return "1 character" if count == 1 else f"{count} characters"


def _what(kind: str, field: str | None, ctx: Mapping[str, Any]) -> str | None:
    """What the value must be, for the error kinds a request can produce."""
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{words} {_bound(field, ctx.get(key))}"
    fixed = {
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "float_parsing": "a number",
        "float_type": "a number",
        "finite_number": "a finite number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "text",
        "list_type": "a list",
        "uuid_parsing": "a reservation id",
        "uuid_type": "a reservation id",
    }
    if kind in fixed:
        return fixed[kind]
    if kind == "string_too_long":
        return f"at most {_characters(int(ctx.get('max_length', 0)))}"
    if kind == "string_too_short":
        minimum = int(ctx.get("min_length", 1))
        return NOT_EMPTY if minimum == 1 else f"at least {_characters(minimum)}"
    if kind in ("enum", "literal_error"):
        return f"one of {ctx.get('expected')}"
    return None


def problem(error: Mapping[str, Any]) -> Problem:
    """One validation failure as a sentence."""
    loc = tuple(error.get("loc") or ())
    kind = str(error.get("type") or "")
    field = _field(loc)
    if field is None:  # the body as a whole
        if kind == "json_invalid":
            return Problem("the request body is not valid JSON", None, None)
        return Problem("the request body must be a JSON object", None, "a JSON object")
    label = LABELS.get(field, field)
    allowed = ALLOWED.get(field)
    if kind == "missing":
        needed = f" ({allowed})" if allowed else ""
        return Problem(f"{label} is required{needed}", field, allowed)
    if kind == "extra_forbidden":
        return Problem(f"{label} is not a field of this request", field, None)
    if kind == "string_pattern_mismatch":  # as reservations/rules.py says it
        advice = allowed or f"match {error.get('ctx', {}).get('pattern')}"
        noun = label.removeprefix("the ")
        return Problem(f"invalid {noun} {shown(error.get('input'))}: use {advice}", field, allowed)
    what = _what(kind, field, error.get("ctx") or {})
    if what == NOT_EMPTY:
        message = f"{label} must not be empty"
    elif what is not None:
        message = f"{label} must be {what}"
    elif allowed:  # a kind with no sentence of its own: say what is allowed
        message, what = f"{label} must be {allowed}", allowed
    else:
        message = f"{label} is not valid" + (f" ({error['msg']})" if error.get("msg") else "")
    if "input" in error:
        message += f"; got {shown(error['input'])}"
    if allowed and allowed != what:
        message += f" (allowed: {allowed})"
    return Problem(message, field, allowed or what)


def summary(errors: Sequence[Mapping[str, Any]]) -> Problem:
    """Every failure of one request, in one message; the first names the field."""
    problems = [problem(e) for e in errors] or [Problem("the request is not valid", None, None)]
    sentences = list(dict.fromkeys(p.message for p in problems))
    message = "; ".join(sentences[:MAX_SENTENCES])
    if len(sentences) > MAX_SENTENCES:
        message += f" (and {len(sentences) - MAX_SENTENCES} more)"
    return Problem(message, problems[0].field, problems[0].allowed)
