"""The stand-in's validation rules as pure functions: apimachinery's string rules with their
limits and messages, quantities, base64, and how `admit` turns field errors into a Status."""

from __future__ import annotations

from decimal import Decimal

import pytest

from localcloud.kubernetes import rules, validation


@pytest.mark.parametrize(
    ("rule", "valid", "invalid"),
    [
        (
            rules.dns1123_label,
            ["a", "0", "my-name", "1" * 63],
            ["", "A", "-a", "a-", "a.b", "a" * 64],
        ),
        (
            rules.dns1123_subdomain,
            ["example.com", "a", "a-b.c-d", ".".join(["a" * 63] * 3) + ".b" * 29],
            ["", "a..b", ".a", "a_b", "Example.com", "a" * 254],
        ),
        (rules.dns1035_label, ["a", "my-name", "abc-123"], ["1a", "a.b", "a-", "a" * 64]),
        (
            rules.label_value,
            ["", "a", "MyValue", "my_value", "12345", "a.b-c_d", "v" * 63],
            ["carol@example.com", "-a", "a-", "a b", "v" * 64],
        ),
        (
            rules.qualified_name,
            ["a", "gpu-dev/user", "example.com/MyName", "a" * 63, "b" * 253 + "/a"],
            ["/a", "a/", "a/b/c", "Gpu-Dev/user", "a" * 64, "b" * 254 + "/a", "-a"],
        ),
        (
            rules.config_key,
            ["key.name", "KEY_NAME", "key-name", ".a", "a" * 253],
            [".", "..", "..a", "a/b", "a b", "", "a" * 254],
        ),
        (
            rules.env_var_name,
            ["HOME", "my.env-name", "MY_ENV.NAME", "MyEnvName1", "_", "-a"],
            ["1A", "A B", "A=B", "", ".."],
        ),
        (rules.port_name, ["ssh", "http-2", "a" * 15], ["SSH", "22", "a--b", "-a", "a" * 16]),
    ],
)
def test_string_rules_accept_and_refuse_what_apimachinery_does(rule, valid, invalid):
    assert {v: rule(v) for v in valid if rule(v)} == {}
    assert all(rule(v) for v in invalid), [v for v in invalid if not rule(v)]


def test_messages_are_apimachinerys_word_for_word():
    assert rules.dns1123_label("A" * 64) == [
        "must be no more than 63 characters",
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]
    assert rules.qualified_name("/x") == ["prefix part must be non-empty"]
    assert rules.config_key("..") == ["must not be '..'"]
    assert rules.port_number(0) == ["must be between 1 and 65535, inclusive"]
    assert rules.port_number(65535) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Decimal(1)),
        ("500m", Decimal("0.5")),
        ("8Gi", Decimal(8 * 1024**3)),
        ("1.5", Decimal("1.5")),
        ("1e3", Decimal(1000)),
        ("1E-3", Decimal("0.001")),
        (".5k", Decimal(500)),
        ("+2M", Decimal(2_000_000)),
        ("-1", Decimal(-1)),
        (4, Decimal(4)),
    ],
)
def test_quantities_parse_with_the_kubernetes_grammar(text, value):
    assert rules.quantity(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("8GB", "quantities must match the regular expression"),
        ("", "quantities must match the regular expression"),
        ("1 Gi", "quantities must match the regular expression"),
        ("8GGi", "unable to parse quantity's suffix"),
        ("1.2.3", "unable to parse numeric part of quantity"),
    ],
)
def test_bad_quantities_cannot_be_decoded(text, message):
    with pytest.raises(rules.Undecodable, match=message):
        rules.quantity(text)


def test_base64_is_standard_and_strict():
    assert rules.base64_bytes("c2VjcmV0") == b"secret"
    assert rules.base64_bytes("") == b""
    with pytest.raises(rules.Undecodable, match="illegal base64 data at input byte 5"):
        rules.base64_bytes("carol@example.com")
    with pytest.raises(rules.Undecodable, match="at input byte 0"):
        rules.base64_bytes("abc")


def test_admit_renders_each_field_error_as_a_cause_and_all_in_the_message():
    rejection = validation.admit(
        "configmaps",
        "ConfigMap",
        {"metadata": {"name": "Bad", "labels": {"a": "b@c"}}, "data": {"ok": "", "a b": ""}},
    )
    assert rejection is not None and (rejection.code, rejection.reason) == (422, "Invalid")
    assert [c["field"] for c in rejection.causes or []] == [
        "metadata.name",
        "metadata.labels",
        "data[a b]",
    ]
    assert rejection.message.startswith('ConfigMap "Bad" is invalid: [metadata.name: Invalid ')
    assert (rejection.name, rejection.kind) == ("Bad", "ConfigMap")


def test_admit_merges_secret_string_data_into_data_as_base64():
    secret = {"metadata": {"name": "keys"}, "data": {"a": "YQ=="}, "stringData": {"b": "b"}}
    assert validation.admit("secrets", "Secret", secret) is None
    assert secret == {"metadata": {"name": "keys"}, "data": {"a": "YQ==", "b": "Yg=="}}


def test_an_update_takes_its_name_from_the_url_and_may_not_change_it():
    current = {"metadata": {"name": "cm"}}
    assert validation.admit("configmaps", "ConfigMap", {"data": {}}, current) is None
    renamed = validation.admit("configmaps", "ConfigMap", {"metadata": {"name": "x"}}, current)
    assert renamed is not None and (renamed.code, renamed.reason) == (400, "BadRequest")
