"""Fixtures shared by the conformance tests.

These tests check the sandboxes with clients the project did not write (the
official Python clients). Each fixture starts the real `mirra` binary as a
separate process on a free loopback port, so the tests also cover the CLI
contract: the first line on stdout is `listening on http://ADDR`.
"""

import os
import pathlib
import subprocess
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mirra_bin() -> str:
    """The binary under test: $MIRRA_BIN, else the workspace's debug build."""
    return os.environ.get("MIRRA_BIN", str(ROOT / "target" / "debug" / "mirra"))


def wait_for(what, check, timeout=60):
    """Polls `check` until it returns something truthy (and returns that);
    fails naming `what` after `timeout` seconds. A deadline for eventual
    conditions, never a timing assertion."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def stop_process(proc):
    """SIGTERM, then SIGKILL if it has not stopped within 15 s."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Server:
    """A sandbox process and the address it reported."""

    def __init__(self, args):
        self.proc = subprocess.Popen(
            [mirra_bin(), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        prefix = "listening on "
        if not line.startswith(prefix):
            self.stop()
            raise RuntimeError(f"sandbox did not report its address, first line: {line!r}")
        self.url = line[len(prefix):]
        self.addr = self.url.removeprefix("http://")

    def stop(self):
        stop_process(self.proc)


def write_test_pki(directory, server_names=("server.dc1.consul", "localhost"), server_ips=("127.0.0.1",)):
    """A CA and a server certificate signed by it, as PEM files in
    `directory`: returns {"ca": path, "cert": path, "key": path,
    "other_ca": path}, where `other_ca` is an unrelated CA that signs
    nothing. Made with the `cryptography` package, so no `openssl` binary
    is needed; EC P-256 keys, valid for a day."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def make_ca(cn):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(cn)).issuer_name(name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return key, cert

    ca_key, ca_cert = make_ca("mirra test CA")
    _, other_cert = make_ca("an unrelated CA")
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(n) for n in server_names] + [
        x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(server_names[0])).issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = {k: os.path.join(directory, f"{k}.pem") for k in ["ca", "cert", "key", "other_ca"]}
    pem = serialization.Encoding.PEM
    with open(paths["ca"], "wb") as f:
        f.write(ca_cert.public_bytes(pem))
    with open(paths["other_ca"], "wb") as f:
        f.write(other_cert.public_bytes(pem))
    with open(paths["cert"], "wb") as f:
        f.write(cert.public_bytes(pem))
    with open(paths["key"], "wb") as f:
        f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


class HttpsServer(Server):
    """A `mirra sandbox consul` with `--https-listen`: after the plain
    `listening on http://ADDR` line it reports `listening on https://ADDR`
    (`https_url`, `https_addr`)."""

    def __init__(self, args):
        super().__init__(args)
        line = self.proc.stdout.readline().strip()
        prefix = "listening on https://"
        if not line.startswith(prefix):
            self.stop()
            raise RuntimeError(f"sandbox did not report its HTTPS address, second line: {line!r}")
        self.https_addr = line[len(prefix):]
        self.https_url = "https://" + self.https_addr


@pytest.fixture
def consul_sandbox():
    """A fresh consul-sandbox; yields the Server (url, addr)."""
    server = Server(["sandbox", "consul", "--listen", "127.0.0.1:0"])
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kube_sandbox():
    """A fresh kube-sandbox; yields the Server with `kubeconfig` set."""
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        server = Server(["sandbox", "kube", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig])
        server.kubeconfig = kubeconfig
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def kubectl(kube_sandbox):
    """Runs kubectl against the fresh kube-sandbox; returns the CompletedProcess."""
    env = dict(os.environ, KUBECONFIG=kube_sandbox.kubeconfig)
    # A fresh cache dir: discovery must come from this server.
    env["KUBECACHEDIR"] = os.path.join(os.path.dirname(kube_sandbox.kubeconfig), "cache")

    def run(*args, input=None, check=True):
        p = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {p.stderr}")
        return p

    run.env = env
    return run


@pytest.fixture
def start_kube_sandbox():
    """Starts kube-sandboxes with extra `mirra sandbox kube` arguments
    (e.g. `--history 3`); each returned Server has `kubeconfig` set, and all
    stop when the test ends."""
    started = []
    tmp = tempfile.TemporaryDirectory()

    def start(*extra):
        kubeconfig = os.path.join(tmp.name, f"kubeconfig-{len(started)}")
        server = Server(
            ["sandbox", "kube", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig, *extra]
        )
        server.kubeconfig = kubeconfig
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
        tmp.cleanup()
