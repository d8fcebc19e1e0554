"""`aurora dev --tls`: a local CA and a server certificate it signed, made once under
`<data-dir>/tls/` and reused while valid.

- `ca.pem` the CA certificate: what every service and the CLI trust (`NATS_TLS_CA`);
- `ca-key.pem` its key (0600), kept so the server certificate can be renewed under the same CA;
- `server.pem` / `server-key.pem` (0600) for nats-server, valid for `localhost`, `127.0.0.1`, `::1`.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from aurora_cli.creds import write_private

CA_DAYS = 3650
SERVER_DAYS = 825
RENEW_BEFORE = datetime.timedelta(days=30)
DNS_NAMES = ("localhost",)
IP_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path

    def server_block(self) -> str:
        """The nats-server `tls {}` block (paths absolute: nats-server reads them from its cwd)."""
        return (f'tls {{\n  cert_file: "{self.cert}"\n  key_file: "{self.key}"\n  timeout: 5\n}}\n')


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def make_ca(days: int = CA_DAYS) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Aurora dev local CA")])
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_server_cert(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, *,
                     days: int = SERVER_DAYS) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    now = _now()
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in DNS_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in IP_ADDRESSES]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aurora-dev-nats")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _still_valid(path: Path) -> bool:
    if not path.is_file():
        return False
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.not_valid_after_utc - RENEW_BEFORE > _now()


def ensure_tls(folder: Path) -> TlsFiles:
    """The CA and server files in `folder`, made when missing and renewed when about to expire."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server-key.pem")
    ca_key_file = folder / "ca-key.pem"
    if not (_still_valid(files.ca) and ca_key_file.is_file()):
        ca_key, ca = make_ca()
        write_private(ca_key_file, _pem_key(ca_key))
        files.ca.write_text(_pem_cert(ca), encoding="utf-8")
        files.cert.unlink(missing_ok=True)  # signed by the old CA
    if not _still_valid(files.cert):
        loaded = serialization.load_pem_private_key(ca_key_file.read_bytes(), password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
        key, cert = make_server_cert(loaded, ca)
        write_private(files.key, _pem_key(key))
        files.cert.write_text(_pem_cert(cert), encoding="utf-8")
    return files
