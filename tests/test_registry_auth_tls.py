"""The registry client against registries that behave like real ones: TLS with a private CA,
htpasswd (basic) auth, token (JWT bearer) auth; credentials from DOCKER_CONFIG, a credential helper
and CI variables; the secret never printed (issue 11)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
import requests

from ninfer_release.errors import ExitCode, InputError, PublishError
from ninfer_release.registry import RegistryClient, RegistryError, RegistryOptions, find_credential
from ninfer_release.releases._oci_publisher import OciPublisher
from registry_fixtures import (
    PASSWORD,
    REFRESH_TOKEN,
    USER,
    LoopbackCA,
    Registry,
    TokenRegistry,
    write_credential_helper,
    write_docker_config,
    write_identity_token_config,
)
from test_publish import ENGINE, make_set, request_for


def _publish_and_pull(pub: OciPublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    first = pub.publish(request_for(tmp_path / "set", names))
    assert first.status == "published"
    assert pub.publish(request_for(tmp_path / "set", names)).status == "already_published"
    dest = tmp_path / "pulled"
    dest.mkdir()
    pulled = pub.pull("v1.0.0-beta.1", dest)
    assert sorted(f.name for f in pulled.files) == sorted(names)
    for name in names:
        assert (dest / name).read_bytes() == (tmp_path / "set" / name).read_bytes()


def test_tls_htpasswd_with_credentials_only_in_docker_config(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    config = write_docker_config(tmp_path / "docker", [tls_registry.host])
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    _publish_and_pull(
        OciPublisher(host=tls_registry.host, repository="auth/dockerconfig", options=options), tmp_path
    )


def test_tls_htpasswd_with_a_credential_helper_on_path(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    write_credential_helper(tmp_path / "bin", "ninfertest", [tls_registry.host])
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "config.json").write_text(json.dumps({"credsStore": "ninfertest"}))
    env = {"DOCKER_CONFIG": str(tmp_path / "docker"), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    cred = find_credential(tls_registry.host, env)
    assert cred is not None and cred.username == USER and cred.source == "docker-credential-ninfertest"
    assert PASSWORD not in repr(cred) and PASSWORD not in str(cred)
    options = RegistryOptions(ca_file=test_ca.ca, environ=env)
    _publish_and_pull(
        OciPublisher(host=tls_registry.host, repository="auth/helper", options=options), tmp_path
    )


def test_cred_helpers_entry_wins_and_a_miss_falls_back_to_auths(tmp_path: Path) -> None:
    write_credential_helper(tmp_path / "bin", "one", ["reg.example:5000"])
    auth = base64.b64encode(b"other:pw").decode()
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "credHelpers": {"reg.example:5000": "one"},
                "credsStore": "one",
                "auths": {"https://plain.example": {"auth": auth}},
            }
        )
    )
    env = {"DOCKER_CONFIG": str(tmp_path), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    helped = find_credential("reg.example:5000", env)
    assert helped is not None and helped.secret == PASSWORD
    plain = find_credential("plain.example", env)
    assert plain is not None and (plain.username, plain.secret) == ("other", "pw")
    assert find_credential("unknown.example", env) is None


def test_ci_variables_and_github_token(tmp_path: Path) -> None:
    env = {"NINFER_REGISTRY_USERNAME": "u", "NINFER_REGISTRY_PASSWORD": "p", "DOCKER_CONFIG": str(tmp_path)}
    assert find_credential("any.example", env) is not None
    gh = {"GITHUB_TOKEN": "ghs_x", "GITHUB_ACTOR": "bot", "DOCKER_CONFIG": str(tmp_path)}
    cred = find_credential("ghcr.io", gh)
    assert cred is not None and (cred.username, cred.secret, cred.source) == ("bot", "ghs_x", "GITHUB_TOKEN")
    assert find_credential("other.example", gh) is None  # GITHUB_TOKEN is only ever sent to ghcr.io
    with pytest.raises(InputError, match="set both or neither"):
        find_credential("x", {"NINFER_REGISTRY_USERNAME": "u"})
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match=r"config\.json: not JSON"):
        find_credential("x", {"DOCKER_CONFIG": str(tmp_path)})


def test_ci_variables_log_in_to_the_tls_registry(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    env = {
        "NINFER_REGISTRY_USERNAME": USER,
        "NINFER_REGISTRY_PASSWORD": PASSWORD,
        "DOCKER_CONFIG": str(tmp_path),
    }
    options = RegistryOptions(ca_file=test_ca.ca, environ=env)
    _publish_and_pull(OciPublisher(host=tls_registry.host, repository="auth/env", options=options), tmp_path)


def test_tls_registry_without_the_ca_is_refused_not_downgraded(
    tls_registry: Registry, tmp_path: Path
) -> None:
    """A loopback TLS registry whose certificate is not trusted is an error naming the fix; the
    client never falls back to plain HTTP for it (today's client spoke HTTP and got a 400)."""
    config = write_docker_config(tmp_path / "docker", [tls_registry.host])
    options = RegistryOptions(environ={"DOCKER_CONFIG": str(config)}, certs_dirs=())
    names = make_set(tmp_path / "set", ENGINE)
    pub = OciPublisher(host=tls_registry.host, repository="auth/noca", options=options)
    with pytest.raises(PublishError, match=r"TLS certificate not trusted.*--ca-file") as info:
        pub.publish(request_for(tmp_path / "set", names))
    assert info.value.exit_code == ExitCode.PUBLISH and len(info.value.lines) == 1


def test_ca_from_certs_d_and_from_ssl_cert_file(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    config = write_docker_config(tmp_path / "docker", [tls_registry.host])
    certs = tmp_path / "certs.d" / tls_registry.host
    certs.mkdir(parents=True)
    (certs / "ca.crt").write_bytes(test_ca.ca.read_bytes())
    by_dir = RegistryOptions(environ={"DOCKER_CONFIG": str(config)}, certs_dirs=(tmp_path / "certs.d",))
    assert RegistryClient(tls_registry.host, options=by_dir).get_manifest("auth/none", "v0") is None
    by_env = RegistryOptions(
        environ={"DOCKER_CONFIG": str(config), "SSL_CERT_FILE": str(test_ca.ca)}, certs_dirs=()
    )
    assert RegistryClient(tls_registry.host, options=by_env).get_manifest("auth/none", "v0") is None


def test_token_auth_publish_pull_and_refresh(
    token_registry: TokenRegistry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    config = write_docker_config(tmp_path / "docker", [token_registry.host])
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    pub = OciPublisher(host=token_registry.host, repository="auth/token", options=options)
    _publish_and_pull(pub, tmp_path)
    # A token the registry no longer accepts (expired, revoked) is re-asked once, transparently.
    before = token_registry.issuer.issued
    transport = pub.client._http
    for repo, token in list(transport._tokens.items()):
        transport._tokens[repo] = type(token)(
            value="expired." + token.value, expires_at=token.expires_at, scopes=token.scopes
        )
    assert pub.resolve("v1.0.0-beta.1") is not None
    assert token_registry.issuer.issued > before


def test_an_identity_token_is_exchanged_as_an_oauth2_refresh_token(
    token_registry: TokenRegistry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    """docker's ``auths.<host>.identitytoken`` (no password): POSTed to the token service with
    ``grant_type=refresh_token`` (distribution's OAuth2 spec), never sent as a Basic password."""
    config = write_identity_token_config(tmp_path / "docker", [token_registry.host])
    cred = find_credential(token_registry.host, {"DOCKER_CONFIG": str(config)})
    assert cred is not None and cred.is_identity_token and cred.secret == REFRESH_TOKEN
    assert REFRESH_TOKEN not in f"{cred} {cred!r}"
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    before = token_registry.issuer.refreshed
    _publish_and_pull(
        OciPublisher(host=token_registry.host, repository="auth/identity", options=options), tmp_path
    )
    assert token_registry.issuer.refreshed > before


def test_a_wrong_identity_token_is_one_line_without_the_secret(
    token_registry: TokenRegistry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    wrong = "WRONG-" + REFRESH_TOKEN
    config = write_identity_token_config(tmp_path / "docker", [token_registry.host], token=wrong)
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    names = make_set(tmp_path / "set", ENGINE)
    pub = OciPublisher(host=token_registry.host, repository="auth/identity-wrong", options=options)
    with pytest.raises(
        PublishError, match=r"login refused by the token service .* as an identity token"
    ) as info:
        pub.publish(request_for(tmp_path / "set", names))
    assert len(info.value.lines) == 1 and wrong not in str(info.value)


def test_a_helper_answering_the_token_user_gives_an_identity_token(tmp_path: Path) -> None:
    """docker's credential helpers answer ``Username: <token>`` for an identity token."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker-credential-tok"
    script.write_text(
        "#!/usr/bin/env python3\nimport json\n"
        f"print(json.dumps({{'Username': '<token>', 'Secret': {REFRESH_TOKEN!r}}}))\n"
    )
    script.chmod(0o755)
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "config.json").write_text(json.dumps({"credsStore": "tok"}))
    env = {"DOCKER_CONFIG": str(tmp_path / "docker"), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    cred = find_credential("registry.example:5000", env)
    assert cred is not None and cred.is_identity_token and REFRESH_TOKEN not in str(cred)


def test_an_identity_token_cannot_answer_a_basic_challenge(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    config = write_identity_token_config(tmp_path / "docker", [tls_registry.host])
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    with pytest.raises(RegistryError, match="requires a login and only an identity token was found") as info:
        RegistryClient(tls_registry.host, options=options).get_manifest("auth/x", "v1")
    assert REFRESH_TOKEN not in str(info.value)


def test_token_auth_wrong_password_is_one_line_without_the_secret(
    token_registry: TokenRegistry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    wrong = "WRONG-" + PASSWORD
    config = write_docker_config(tmp_path / "docker", [token_registry.host], password=wrong)
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    names = make_set(tmp_path / "set", ENGINE)
    pub = OciPublisher(host=token_registry.host, repository="auth/wrong", options=options)
    with pytest.raises(PublishError, match="login refused by the token service") as info:
        pub.publish(request_for(tmp_path / "set", names))
    assert len(info.value.lines) == 1 and wrong not in str(info.value)
    with pytest.raises(InputError, match="login refused") as pulled:
        pub.pull("v1.0.0-beta.1", tmp_path)
    assert pulled.value.exit_code == ExitCode.INPUT


def test_htpasswd_without_credentials_says_how_to_log_in(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(tmp_path)})
    with pytest.raises(RegistryError, match="requires a login and no credentials were found"):
        RegistryClient(tls_registry.host, options=options).get_manifest("auth/x", "v1")


def test_an_expired_token_is_renewed_before_it_is_sent(
    token_registry: TokenRegistry, test_ca: LoopbackCA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_docker_config(tmp_path / "docker", [token_registry.host])
    client = RegistryClient(
        token_registry.host,
        options=RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)}),
    )
    assert client.get_manifest("auth/expiry", "v0") is None
    transport = client._http
    old = transport._tokens["auth/expiry"]
    transport._tokens["auth/expiry"] = type(old)(value=old.value, expires_at=0.0, scopes=old.scopes)
    sent: list[str] = []
    original = transport._session.request

    def spy(method: str, url: str, **kwargs: Any) -> requests.Response:  # Session.request's keywords
        headers = kwargs.get("headers") or {}
        sent.append(str(headers.get("Authorization", "")) if isinstance(headers, dict) else "")
        return original(method, url, **kwargs)

    monkeypatch.setattr(transport._session, "request", spy)
    before = token_registry.issuer.issued
    assert client.get_manifest("auth/expiry", "v0") is None
    assert f"Bearer {old.value}" not in sent  # the expired token was never sent
    assert token_registry.issuer.issued == before + 1


def test_plain_http_elsewhere_only_with_insecure_registry(
    registry: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A host that is not loopback never gets plain HTTP unless named with --insecure-registry,
    and then loudly (the plain session registry stands in for a remote one here)."""
    import ninfer_release.registry._transport as transport

    monkeypatch.setattr(transport, "is_loopback_host", lambda host: False)
    with pytest.raises(RegistryError, match=f"plain HTTP only with --insecure-registry {registry}"):
        RegistryClient(registry, options=RegistryOptions()).get_manifest("plain/x", "v0")
    allowed = RegistryOptions(insecure_hosts=frozenset({registry}))
    with caplog.at_level("WARNING", logger="ninfer_release.registry"):
        assert RegistryClient(registry, options=allowed).get_manifest("plain/x", "v0") is None
    assert f"INSECURE: talking plain HTTP to {registry}" in caplog.text


def test_loopback_tries_https_first_then_plain_http(
    registry: str, tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path
) -> None:
    plain = RegistryClient(registry, options=RegistryOptions())
    assert plain.get_manifest("plain/y", "v0") is None and plain._http.base().startswith("http://")
    config = write_docker_config(tmp_path / "docker", [tls_registry.host])
    tls = RegistryClient(
        tls_registry.host, options=RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
    )
    assert tls.get_manifest("plain/y", "v0") is None and tls._http.base().startswith("https://")
