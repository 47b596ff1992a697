"""The one retry policy and trust order of the shared HTTP transport (ninfer_release.transport)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ninfer_release import transport


def test_backoff_doubles_with_jitter_up_to_as_much_again_and_is_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(random, "uniform", lambda low, high: high)  # the most jitter
    waits = [
        transport.backoff_wait(n, backoff=0.5, backoff_max=10.0, retry_after=None, remaining=100.0)
        for n in (1, 2, 3, 5, 9)
    ]
    assert waits == [1.0, 2.0, 4.0, 10.0, 10.0]
    monkeypatch.setattr(random, "uniform", lambda low, high: low)  # no jitter
    assert transport.backoff_wait(3, backoff=0.5, backoff_max=10.0, retry_after=None, remaining=100.0) == 2.0


def test_retry_after_is_honoured_but_never_past_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(random, "uniform", lambda low, high: low)
    assert transport.backoff_wait(1, backoff=0.5, backoff_max=10.0, retry_after=7.0, remaining=100.0) == 7.0
    assert transport.backoff_wait(1, backoff=0.5, backoff_max=10.0, retry_after=7.0, remaining=3.0) == 3.0
    assert transport.backoff_wait(1, backoff=0.5, backoff_max=10.0, retry_after=None, remaining=-1.0) == 0.0


def test_trust_order_ca_file_then_certs_d_then_ssl_cert_file(tmp_path: Path) -> None:
    ca, certs_d = tmp_path / "ca.pem", tmp_path / "certs.d" / "h:5000" / "ca.crt"
    certs_d.parent.mkdir(parents=True)
    certs_d.write_text("x")
    env = {"SSL_CERT_FILE": "/env/ca.pem"}
    assert transport.resolve_trust(ca, env, (certs_d,)) == str(ca)
    assert transport.resolve_trust(None, env, (certs_d,)) == str(certs_d)
    assert transport.resolve_trust(None, env, (tmp_path / "absent",)) == "/env/ca.pem"


def test_the_untrusted_message_names_both_fixes() -> None:
    assert transport.untrusted_message("self-signed") == (
        "TLS certificate not trusted (self-signed); give the CA with --ca-file or SSL_CERT_FILE"
    )
    assert transport.untrusted_message("x", certs_d="certs.d/h/ca.crt").endswith(
        "--ca-file, SSL_CERT_FILE or certs.d/h/ca.crt"
    )
