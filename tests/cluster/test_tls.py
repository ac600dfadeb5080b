"""A TLS-secured cluster, certificates made here, verified with the --tls-* options."""

from __future__ import annotations

import datetime
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcheck.errors import ExitCode
from tests.support.deadlines import HANG
from tests.support.subprocess_cluster import (
    DASK_TIMEOUTS_PAST_HANG,
    SubprocessCluster,
    run_envcheck,
    start_cluster,
)

pytestmark = pytest.mark.slow


def _write_pki(root: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA and one certificate it signs (server and client use, for 127.0.0.1/localhost)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    root.mkdir(parents=True, exist_ok=True)
    paths = root / "ca.pem", root / "cert.pem", root / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def _tls_args(ca: Path, cert: Path, key: Path) -> tuple[str, ...]:
    return ("--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key))


@pytest.fixture(scope="module")
def tls_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SubprocessCluster, tuple]]:
    root = tmp_path_factory.mktemp("tls")
    pki = _write_pki(root / "pki", "cluster")
    cluster = start_cluster(root / "cluster", tls=_tls_args(*pki))
    try:
        cluster.add_worker("secure")
        from distributed.security import Security

        security = Security(
            tls_ca_file=str(pki[0]), tls_client_cert=str(pki[1]), tls_client_key=str(pki[2]),
            require_encryption=True,
        )
        cluster.wait_for_workers(["secure"], security=security)
        yield cluster, pki
    finally:
        cluster.stop()


def test_tls_cluster_verifies_with_the_tls_options(tls_cluster, tmp_path: Path) -> None:
    cluster, pki = tls_cluster
    assert cluster.address.startswith("tls://")
    out = tmp_path / "report.json"
    proc, _ = run_envcheck(
        "verify", "cluster", cluster.address, *_tls_args(*pki),
        "--smoke", "submit", "--timeout", "20", "--json", str(out),
    )
    assert proc.returncode == ExitCode.OK, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    by_check = {(r["check"], r["node"]): r for r in report["results"]}
    assert by_check[("workers", "")]["message"].startswith("1 of 1 workers reported facts")
    assert not [r for r in report["results"] if r["check"] == "facts"]
    assert any(r["check"] == "smoke.submit" and r["status"] == "pass" for r in report["results"])
    assert report["environment"]["scheduler"] == cluster.address


def test_tls_address_without_tls_options_is_bad_input(tls_cluster) -> None:
    cluster, _ = tls_cluster
    proc, took = run_envcheck("verify", "cluster", cluster.address, "--timeout", "5")
    assert proc.returncode == ExitCode.BAD_INPUT
    assert "needs --tls-ca-file" in proc.stderr and "Traceback" not in proc.stderr


def test_certificate_from_another_ca_is_unreachable_within_the_timeout(
    tls_cluster, tmp_path: Path
) -> None:
    cluster, _ = tls_cluster
    stranger = _write_pki(tmp_path / "other", "other")
    proc, took = run_envcheck(
        "verify", "cluster", cluster.address, *_tls_args(*stranger), "--timeout", "3",
        env=DASK_TIMEOUTS_PAST_HANG,
    )
    assert proc.returncode == ExitCode.UNREACHABLE, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        line for line in proc.stderr.splitlines() if line.startswith("envcheck: no scheduler")
    ]
    assert cluster.address in proc.stderr and "within 3 s" in proc.stderr
    assert took < HANG  # --timeout holds: distributed's own timeouts are 600 s here
