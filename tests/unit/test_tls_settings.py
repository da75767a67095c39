"""TLS settings: on unless DUETIME_PLAINTEXT says otherwise, every missing or bad file named at
once with the service's other bad settings, plaintext logged loudly at start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duetime_api.config import Settings as ApiSettings
from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.secrets.keyring import new_keyring
from duetime_infra.tls import ClientTls, Link, ServerTls, read_tls, warn_plaintext
from duetime_relay.config import Settings as RelaySettings
from duetime_scheduler.config import Settings as SchedulerSettings
from duetime_worker.config import Settings as WorkerSettings
from testkit.tls import Certs, make_certs

# The api and the scheduler also need a keyring (secrets at rest); these tests are about TLS.
KEYS = {"DUETIME_SECRET_KEYS": new_keyring().to_json()}


@pytest.fixture(scope="module")
async def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return await make_certs(tmp_path_factory.mktemp("certs"))


def problems(error: pytest.ExceptionInfo[ConfigError]) -> str:
    return str(error.value)


def test_services_refuse_to_start_without_tls_settings_naming_the_variables() -> None:
    with pytest.raises(ConfigError) as api:
        ApiSettings.from_env({})
    assert "DUETIME_TLS_CA_FILE: required to verify the postgres servers" in problems(api)
    assert "DUETIME_TLS_CERT_FILE, DUETIME_TLS_KEY_FILE: required to serve gRPC" in problems(api)
    with pytest.raises(ConfigError) as scheduler:
        SchedulerSettings.from_env({})
    assert "verify the etcd, postgres servers" in problems(scheduler)
    assert "DUETIME_PLAINTEXT=etcd,postgres" in problems(scheduler)
    with pytest.raises(ConfigError) as relay:
        RelaySettings.from_env({})
    assert "verify the kafka, postgres servers" in problems(relay)
    with pytest.raises(ConfigError) as worker:
        WorkerSettings.from_env({"DUETIME_WORKER_TOKEN": "t"})
    assert "verify the grpc, kafka servers" in problems(worker)


def test_plaintext_by_name_or_all() -> None:
    settings = ApiSettings.from_env({**KEYS, "DUETIME_PLAINTEXT": "grpc, Postgres"})
    assert settings.tls.plaintext == {Link.GRPC, Link.POSTGRES}
    assert settings.tls.server() is None
    assert settings.tls.client(Link.POSTGRES) is None
    scheduler = SchedulerSettings.from_env({**KEYS, "DUETIME_PLAINTEXT": "all"})
    assert scheduler.tls.plaintext == set(Link)


def test_every_bad_setting_is_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        ApiSettings.from_env(
            {
                "DUETIME_PLAINTEXT": "grpc,ldap",
                "DUETIME_TLS_CA_FILE": str(tmp_path / "missing.pem"),
                "DUETIME_PG_SSLMODE": "prefer",
                "DUETIME_API_PG_POOL_SIZE": "0",
            }
        )
    text = problems(error)
    assert "DUETIME_PLAINTEXT='grpc,ldap': unknown ldap" in text
    assert "missing.pem': not a readable file" in text
    assert "DUETIME_PG_SSLMODE='prefer'" in text
    assert "DUETIME_API_PG_POOL_SIZE=0" in text


def test_files_must_be_a_ca_bundle_and_a_matching_pair(certs: Certs, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ConfigError) as error:
        ApiSettings.from_env(
            {
                "DUETIME_TLS_CA_FILE": str(junk),
                "DUETIME_TLS_CERT_FILE": certs.cert,
                "DUETIME_TLS_KEY_FILE": certs.ca,  # a certificate, not the key
            }
        )
    text = problems(error)
    assert "junk.pem': not a PEM CA bundle" in text
    assert "not a matching PEM certificate and key" in text
    with pytest.raises(ConfigError, match="both or neither"):
        RelaySettings.from_env({**certs.env(), "DUETIME_TLS_KEY_FILE": ""})


def test_tls_settings_in_full(certs: Certs) -> None:
    env = {
        **certs.env(),
        **KEYS,
        "DUETIME_WORKER_CLIENT_CA_FILE": certs.ca,
        "DUETIME_PG_SSLMODE": "verify-ca",
    }
    settings = SchedulerSettings.from_env(env)
    assert settings.worker_client_ca_file == certs.ca
    assert settings.tls.server(settings.worker_client_ca_file) == ServerTls(
        certs.cert, certs.key, certs.ca
    )
    assert settings.tls.client(Link.ETCD) == ClientTls(certs.ca, certs.cert, certs.key, True)
    # verify-ca: the CA, not the name.
    assert settings.tls.client(Link.POSTGRES) == ClientTls(certs.ca, certs.cert, certs.key, False)
    assert settings.tls.uses == {Link.GRPC, Link.POSTGRES, Link.ETCD}


def test_worker_client_certificates_need_tls(certs: Certs) -> None:
    with pytest.raises(ConfigError, match="DUETIME_WORKER_CLIENT_CA_FILE: client certificates"):
        SchedulerSettings.from_env(
            {"DUETIME_PLAINTEXT": "all", "DUETIME_WORKER_CLIENT_CA_FILE": certs.ca}
        )


def test_a_worker_with_a_client_certificate_needs_no_token(certs: Certs) -> None:
    assert WorkerSettings.from_env(certs.env()).worker_token == ""
    ca_only = {"DUETIME_TLS_CA_FILE": certs.ca}
    with pytest.raises(ConfigError, match="DUETIME_WORKER_TOKEN: required"):
        WorkerSettings.from_env(ca_only)
    with pytest.raises(ConfigError, match="DUETIME_WORKER_TOKEN: required"):
        WorkerSettings.from_env({**certs.env(), "DUETIME_PLAINTEXT": "grpc"})


def test_plaintext_is_a_warning_naming_the_connections(caplog: pytest.LogCaptureFixture) -> None:
    env = EnvReader({"DUETIME_PLAINTEXT": "all"})
    settings = read_tls(env, serves=False, connects=[Link.KAFKA, Link.POSTGRES])
    env.finish()
    with caplog.at_level(logging.WARNING):
        warn_plaintext(settings)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "PLAINTEXT connections: kafka, postgres" in record.getMessage()
    caplog.clear()
    encrypted = EnvReader({"DUETIME_PLAINTEXT": "etcd"})
    warn_plaintext(read_tls(encrypted, serves=False, connects=[Link.KAFKA]))
    assert caplog.records == []
