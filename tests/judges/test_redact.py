"""Redaction and control-character cleaning: what may leave the process or reach a log line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.redact import Redactor, clean_control, redact, redact_value, safe_text


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (
            "openai said: Incorrect API key provided: sk-proj-AbCdEf0123456789xyzXYZ",
            "AbCdEf0123456789xyzXYZ",
            "api_key",
        ),
        ("AuthenticationError(sk-ant-api03-abcdefghijklmnopqrstuv)", "abcdefghijklmnopqrstuv", "api_key"),
        ("Authorization: Bearer eyJhbGciOi.payload-part.sig_part", "eyJhbGciOi.payload-part", "bearer"),
        ("GET https://admin:s3cr3t-pass@db.internal:5432/orders", "s3cr3t-pass", "url_password"),
        ("notify ops-team@example.com when done", "ops-team@example.com", "email"),
        ('{"password": "correct horse battery"}', "correct", "credential"),
        ("export API_KEY=abcd1234efgh5678", "abcd1234efgh5678", "credential"),
        ("aws AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE", "api_key"),
        ("token ghp_" + "a1" * 18 + " leaked", "a1" * 18, "api_key"),
        ("role AKIAIOSFODNN7EXAMPLE_prod assumed", "AKIAIOSFODNN7EXAMPLE", "api_key"),
        ("env_ASIAIOSFODNN7EXAMPLE_x", "ASIAIOSFODNN7EXAMPLE", "api_key"),
        ("GET /login?user=bob&password%3Dhunter22%21x%26next%3D1", "hunter22", "credential"),
        ("%7B%22api_key%22%3A%22abcd1234efgh%22%7D", "abcd1234efgh", "credential"),
        ("creds wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY done", "wJalrXUtnFEMI", "aws_secret"),
        ("aws_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "K7MDENG", "aws_secret"),
    ],
)
def test_each_kind_of_secret_is_replaced_by_its_marker(text, secret, kind):
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=512 and input_tokens: 1200",
        "token usage exceeded the budget",
        "read_file orders_controller.py -> 120 lines",
        "ran the billing suite: 1 failed",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b merged",  # SHA-1: one case
        "SHA1 3F786850E387550FDAB836ED7E6DC881DE23001B",
        "request 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d failed",  # UUID
        "9" * 40,
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhf",
        "AKIAIOSFODNN7EXAMPLEX is 21 characters, not an access key id",
    ],
)
def test_ordinary_trace_text_is_left_alone(text):
    assert redact(text) == text


def test_labels_stay_readable_around_a_hidden_secret():
    assert redact("password=hunter22 next") == "password=[REDACTED:credential] next"
    assert redact("a=1&password%3Dhunter22%26b%3D2") == "a=1&password%3D[REDACTED:credential]%26b%3D2"
    assert redact("postgres://app:pw12@db/x") == "postgres://app:[REDACTED:url_password]@db/x"


def test_patterns_are_extensible():
    redactor = Redactor()
    redactor.add("ticket", r"TCK-(?P<secret>\d{6})")
    assert redactor.redact("see TCK-123456") == "see TCK-[REDACTED:ticket]"
    assert redact("see TCK-123456") == "see TCK-123456"  # the default redactor is unchanged


def test_values_are_redacted_all_the_way_down():
    value = {"args": ["x", {"sk-live-0123456789abcdefABCDEF": "mail a@b.io"}], "n": 3}
    assert redact_value(value) == {"args": ["x", {"[REDACTED:api_key]": "mail [REDACTED:email]"}], "n": 3}


def test_newlines_and_escape_sequences_cannot_forge_lines_or_drive_a_terminal():
    assert clean_control("grep\nWARNING loop detected: none") == "grep\\nWARNING loop detected: none"
    assert clean_control("\x1b[2J\x1b[31mred") == "\\x1b[2J\\x1b[31mred"
    assert clean_control("a\u202eb\x00c\x7f") == "a\\u202eb\\x00c\\x7f"
    assert safe_text("x" * 50, limit=10) == "x" * 9 + "…"


@given(
    st.text(), st.sampled_from(["sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3", "someone.else@corp.example.org"]), st.text()
)
def test_a_secret_anywhere_in_any_text_never_survives_and_no_control_character_does(before, secret, after):
    out = safe_text(f"{before} {secret} {after}")
    assert secret not in out
    assert re.search("[\x00-\x1f\x7f-\x9f]", out) is None


# Labels and shapes of every kind of secret (whole, cut, in other cases), with characters
# that case-fold onto ASCII letters only in the patterns' matching (long s, Kelvin sign,
# dotless i): the check that lets clean text skip the patterns must never skip a text a
# pattern changes.
_LABELS = st.sampled_from(
    [
        "-----BEGIN RSA PRIVATE KEY-----", "-----begi", "https://u:", "Bearer ", "bEARER ",
        "authorization: ", "TOKEN=", "tok=", "eyJabcdef.eyJabcdef.", "sk-", "SK-", "rk-", "pk-",
        "ghp_", "GHO_", "github_pat_", "xoxb-", "XoX", "AKIA", "ASIA", "AIza", "sk_live_",
        "rk_TEST_", "hf_", "PaSs=", "password: ", "pwd=", "Secret: ", "api_key=", "API-KEY: ",
        "ke=", "pa\u017f\u017f=", "\u212aey=", "author\u0131zation: ", "user@", "e", "",
    ]
)  # fmt: skip


@settings(max_examples=300)
@given(
    st.sampled_from(["", "a ", "the ", "\u00e9 ", "\u0130 "]),
    _LABELS,
    st.sampled_from(["", "abcdefgh12345678", "0123456789ABCDEFGHIJabcdefghij0123456789", "example.com"]),
    st.sampled_from(["", " end", "@", "\u0131"]),
)
def test_the_pre_check_never_skips_a_text_a_pattern_would_change(before, label, value, after):
    text = before + label + value + after
    redactor = Redactor()
    every_pattern = text
    for pattern in redactor.patterns:
        every_pattern = pattern.sub(every_pattern)
    assert redactor.redact(text) == every_pattern


_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: Text around a secret: anything but the characters that would extend it.
_AROUND = st.text(st.characters(blacklist_characters=_BASE64 + "=_-", blacklist_categories=("Cs",)))


@given(
    _AROUND,
    st.sampled_from(["AKIA", "ASIA"]),
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16),
    st.sampled_from(["", "_", "-", " ", ".", '"', "/"]),
    _AROUND,
)
def test_an_aws_access_key_id_never_survives_whatever_is_around_it(before, prefix, rest, joint, after):
    key = prefix + rest
    out = redact(f"{before}{joint}{key}{joint}{after}")
    assert key not in out


@given(
    st.text(_BASE64, min_size=40, max_size=40).filter(
        lambda s: any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
    ),
    _AROUND,
    _AROUND,
)
def test_an_unlabelled_aws_secret_key_shape_never_survives(key, before, after):
    out = redact(f"{before} {key} {after}")
    assert key not in out


@given(st.text("0123456789abcdef", min_size=40, max_size=40), st.booleans())
def test_a_hex_digest_is_never_taken_for_a_secret(digest, upper):
    text = f"sha1 {digest.upper() if upper else digest} ok"
    assert redact(text) == text


@given(
    st.sampled_from(["password", "api_key", "token", "client_secret"]),
    st.sampled_from(["%3D", "%3d", "%3A", "%22%3A%22"]),
    st.text(_BASE64[:62] + "!*._~", min_size=8, max_size=40).map(
        lambda s: "x" + s  # a short number alone (a port, a count) is not taken for a secret
    ),
)
def test_a_url_encoded_labelled_secret_never_survives(label, separator, value):
    out = redact(f"q?{label}{separator}{value}%26next%3D1")
    assert value not in out and out.endswith("%26next%3D1")
