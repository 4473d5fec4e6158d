"""The string rules of Kubernetes' apimachinery validation (`util/validation`), with its
messages and limits word for word, and field errors rendered as the API server renders them
(`field.Error.ErrorBody`). `validation.py` applies them to objects."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

Rule = Callable[[str], list[str]]

# field.ErrorType -> metav1.CauseType
REASONS = {
    "Required value": "FieldValueRequired",
    "Invalid value": "FieldValueInvalid",
    "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound",
    "Unsupported value": "FieldValueNotSupported",
    "Too long": "FieldValueTooLong",
    "Forbidden": "FieldValueForbidden",
}
_NO_VALUE_SHOWN = ("Required value", "Too long", "Forbidden")


@dataclass(frozen=True)
class FieldError:
    type: str
    field: str
    detail: str = ""
    value: Any = None

    def body(self) -> str:
        if self.type in _NO_VALUE_SHOWN:
            text = self.type
        elif isinstance(self.value, str):
            text = f"{self.type}: {json.dumps(self.value, ensure_ascii=False)}"
        else:
            text = f"{self.type}: {self.value}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": REASONS[self.type], "message": self.body(), "field": self.field}


def invalid(field: str, value: Any, messages: Iterable[str]) -> list[FieldError]:
    return [FieldError("Invalid value", field, message, value) for message in messages]


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("Required value", field, detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError("Duplicate value", field, "", value)


def too_long(field: str, limit: int) -> FieldError:
    return FieldError("Too long", field, f"may not be more than {limit} bytes")


def supported(field: str, value: Any, allowed: tuple[str, ...]) -> list[FieldError]:
    if value is None or value in allowed:
        return []
    listed = ", ".join(f'"{v}"' for v in allowed)
    return [FieldError("Unsupported value", field, f"supported values: {listed}", value)]


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _chdir_prefix(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"must not be '{value}'"]
    return ["must not start with '..'"] if value.startswith("..") else []


def _pattern(message: str, fmt: str, max_length: int, *examples: str) -> Rule:
    regex = re.compile(fmt)

    def check(value: str) -> list[str]:
        errors = []
        if max_length and len(value.encode()) > max_length:
            errors.append(f"must be no more than {max_length} characters")
        if not regex.fullmatch(value):
            errors.append(_regex_error(message, fmt, *examples))
        return errors

    return check


_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
dns1123_label = _pattern(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _LABEL,
    63,
    "my-name",
    "123-abc",
)
dns1123_subdomain = _pattern(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character",
    rf"{_LABEL}(\.{_LABEL})*",
    253,
    "example.com",
)
dns1035_label = _pattern(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character",
    "[a-z]([-a-z0-9]*[a-z0-9])?",
    63,
    "my-name",
    "abc-123",
)
label_value = _pattern(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
    63,
    "MyValue",
    "my_value",
    "12345",
)
_QUALIFIED = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
    "MyName",
    "my.name",
    "123-abc",
)
_qualified_part = _pattern(_QUALIFIED[0], _QUALIFIED[1], 63, *_QUALIFIED[2:])
_config_key = _pattern(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    "[-._a-zA-Z0-9]+",
    253,
    "key.name",
    "KEY_NAME",
    "key-name",
)
_env_var_name = _pattern(
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit",
    "[-._a-zA-Z][-._a-zA-Z0-9]*",
    0,
    "my.env-name",
    "MY_ENV.NAME",
    "MyEnvName1",
)


def qualified_name(value: str) -> list[str]:
    """Label and annotation keys: an optional DNS subdomain prefix and '/', then a name."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {_regex_error(*_QUALIFIED)} with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        errors = (
            [f"prefix part {m}" for m in dns1123_subdomain(prefix)]
            if prefix
            else ["prefix part must be non-empty"]
        )
    if not parts[-1]:
        return [*errors, "name part must be non-empty", f"name part {_regex_error(*_QUALIFIED)}"]
    return errors + [f"name part {m}" for m in _qualified_part(parts[-1])]


def config_key(value: str) -> list[str]:
    return _config_key(value) + _chdir_prefix(value)


def env_var_name(value: str) -> list[str]:
    return _env_var_name(value) + _chdir_prefix(value)


def port_number(value: Any) -> list[str]:
    valid = isinstance(value, int) and 1 <= value <= 65535
    return [] if valid else ["must be between 1 and 65535, inclusive"]


def port_name(value: str) -> list[str]:
    """IANA_SVC_NAME, for container port names and named target ports."""
    checks = [
        (len(value) > 15, "must be no more than 15 characters"),
        (
            not re.fullmatch("[-a-z0-9]+", value),
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ),
        (not re.search("[a-z]", value), "must contain at least one letter (a-z)"),
        ("--" in value, "must not contain consecutive hyphens"),
        (value[:1] == "-" or value[-1:] == "-", "must not begin or end with a hyphen"),
    ]
    return [message for failed, message in checks if failed]


def labels(values: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    for key, value in values.items():
        errors += invalid(path, key, qualified_name(key))
        errors += invalid(path, value, label_value(str(value)))
    return errors


def unique_names(
    items: list[dict[str, Any]], path: str, rule: Rule, require: bool = True
) -> list[FieldError]:
    errors, seen = [], set()
    for index, item in enumerate(items):
        name, at = item.get("name") or "", f"{path}[{index}].name"
        if not name:
            errors += [required(at)] if require else []
            continue
        errors += invalid(at, name, rule(name))
        errors += [duplicate(at, name)] if name in seen else []
        seen.add(name)
    return errors


# Decoding: values the API server cannot even deserialise (400 BadRequest, not 422).
_QUANTITY_LOOSE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(\d+\.?\d*|\.\d+))(?P<suffix>[KMGTPE]i|[mkMGTPE]|[eE][+-]?\d+)?"
)
_SUFFIXES = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(1000) ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    "m": Decimal("0.001"),
}


class Undecodable(ValueError):
    pass


def quantity(value: Any) -> Decimal:
    """A resource.Quantity as a number, or Undecodable with the API server's message."""
    text = str(value)
    if not re.fullmatch(_QUANTITY_LOOSE, text):
        raise Undecodable(f"quantities must match the regular expression '{_QUANTITY_LOOSE}'")
    match = _QUANTITY.fullmatch(text)
    if not match:
        numeric = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", re.split("[eEinumkKMGTP]", text)[0])
        raise Undecodable(
            "unable to parse quantity's suffix"
            if numeric
            else "unable to parse numeric part of quantity"
        )
    suffix = match["suffix"] or ""
    scale = (
        Decimal(10) ** int(suffix[1:])
        if suffix[:1] in "eE" and suffix
        else _SUFFIXES.get(suffix, 1)
    )
    try:
        return Decimal(match["number"]) * scale
    except InvalidOperation:  # pragma: no cover - the regex admits only decimals
        raise Undecodable("unable to parse numeric part of quantity") from None


_BASE64 = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n")


def base64_bytes(value: Any) -> bytes:
    """A []byte field's value (standard base64, as Go's encoding/json reads it)."""
    text = value if isinstance(value, str) else json.dumps(value)
    try:
        return base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(text) if c not in _BASE64), len(text) - len(text) % 4)
        raise Undecodable(f"illegal base64 data at input byte {bad}") from None
