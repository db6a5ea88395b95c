"""Credentials of the emulator: CA, server certificate, token, kubeconfigs.

ensure_credentials(directory) creates, once, under directory: ca.crt /
ca.key (a self-signed ECDSA P-256 CA), server.crt / server.key (signed by
it, SANs 127.0.0.1, ::1 and localhost) and token (a random bearer token);
files already there are reused, so a restarted emulator keeps its CA and
token. write_kubeconfigs(directory, port, token) (re)writes kubeconfig
(CA by path) and kubeconfig-inline (certificate-authority-data). Files are
written atomically (temporary file + rename); keys are mode 0600. Raises
OSError on I/O failure.
"""

import base64
import datetime
import ipaddress
import os
import secrets

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _write(path, data, mode=0o644):
  tmp = "%s.tmp.%d" % (path, os.getpid())
  fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
  with os.fdopen(fd, "wb") as f:
    f.write(data)
  os.replace(tmp, path)


def _key_pem(key):
  return key.private_bytes(serialization.Encoding.PEM,
                           serialization.PrivateFormat.PKCS8,
                           serialization.NoEncryption())


def _cert(subject, issuer, public_key, signing_key, ca):
  now = datetime.datetime.now(datetime.timezone.utc)
  builder = (x509.CertificateBuilder()
             .subject_name(subject).issuer_name(issuer)
             .public_key(public_key)
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(days=3650)))
  if ca:
    builder = builder.add_extension(
        x509.BasicConstraints(ca=True, path_length=0), critical=True)
    builder = builder.add_extension(x509.KeyUsage(
        digital_signature=True, content_commitment=False,
        key_encipherment=False, data_encipherment=False, key_agreement=False,
        key_cert_sign=True, crl_sign=True, encipher_only=False,
        decipher_only=False), critical=True)
    builder = builder.add_extension(
        x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
  else:
    builder = builder.add_extension(
        x509.BasicConstraints(ca=False, path_length=None), critical=True)
    builder = builder.add_extension(x509.KeyUsage(
        digital_signature=True, content_commitment=False,
        key_encipherment=False, data_encipherment=False, key_agreement=False,
        key_cert_sign=False, crl_sign=False, encipher_only=False,
        decipher_only=False), critical=True)
    builder = builder.add_extension(
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
        critical=False)
    builder = builder.add_extension(x509.SubjectAlternativeName([
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1"))]), critical=False)
    builder = builder.add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(
            signing_key.public_key()), critical=False)
  return builder.sign(signing_key, hashes.SHA256())


def ensure_credentials(directory):
  """Creates what is missing; returns {ca, ca_key, cert, key, token}."""
  os.makedirs(directory, exist_ok=True)
  paths = {n: os.path.join(directory, f) for n, f in (
      ("ca", "ca.crt"), ("ca_key", "ca.key"), ("cert", "server.crt"),
      ("key", "server.key"), ("token", "token"))}
  if not (os.path.exists(paths["ca"]) and os.path.exists(paths["ca_key"])):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         "kube-apiserver-emulator-ca")])
    cert = _cert(name, name, key.public_key(), key, ca=True)
    _write(paths["ca_key"], _key_pem(key), 0o600)
    _write(paths["ca"], cert.public_bytes(serialization.Encoding.PEM))
    for stale in ("cert", "key"):
      if os.path.exists(paths[stale]):
        os.unlink(paths[stale])
  if not (os.path.exists(paths["cert"]) and os.path.exists(paths["key"])):
    with open(paths["ca_key"], "rb") as f:
      ca_key = serialization.load_pem_private_key(f.read(), None)
    with open(paths["ca"], "rb") as f:
      ca_cert = x509.load_pem_x509_certificate(f.read())
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         "kube-apiserver")])
    cert = _cert(name, ca_cert.subject, key.public_key(), ca_key, ca=False)
    _write(paths["key"], _key_pem(key), 0o600)
    _write(paths["cert"], cert.public_bytes(serialization.Encoding.PEM))
  if not os.path.exists(paths["token"]):
    _write(paths["token"], secrets.token_hex(24).encode() + b"\n", 0o600)
  with open(paths["token"], encoding="ascii") as f:
    paths["token_value"] = f.read().strip()
  return paths


def write_kubeconfigs(directory, port, token):
  """Writes DIR/kubeconfig and DIR/kubeconfig-inline for port and token."""
  ca = os.path.join(directory, "ca.crt")
  with open(ca, "rb") as f:
    ca_data = base64.b64encode(f.read()).decode()
  server = "https://127.0.0.1:%d" % port
  for name, cluster, user in (
      ("kubeconfig", {"server": server, "certificate-authority": ca},
       {"token": token}),
      ("kubeconfig-inline",
       {"server": server, "certificate-authority-data": ca_data},
       {"token": token})):
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "emulator", "cluster": cluster}],
        "users": [{"name": "emulator", "user": user}],
        "contexts": [{"name": "emulator",
                      "context": {"cluster": "emulator", "user": "emulator"}}],
        "current-context": "emulator", "preferences": {}}
    _write(os.path.join(directory, name),
           yaml.safe_dump(config, default_flow_style=False).encode())
