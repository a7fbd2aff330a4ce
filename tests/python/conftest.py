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
