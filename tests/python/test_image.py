"""The container image, built offline by scripts/build-image (buildah, FROM
scratch, from the binary under test), doing both of mirra's jobs.

Containers cannot be started on these machines: crun, podman's runtime,
fails every start with `setrlimit RLIMIT_NOFILE: Operation not permitted`
(also with `--ulimit host`). So the image's root filesystem is run with
chroot instead, as the image's user (65532), on the host network, with the
commands the deploy manifests and the consul Helm chart use: `mirra run`,
and `/bin/sh -ec "consul-k8s-control-plane sync-catalog ..."`. The first
test records whether podman can run it, so the fallback is visible.

Needs buildah and busybox-static (`apt-get install buildah
busybox-static`) and root; skipped without them (scripts/test does not
install them); the test of the scripts' argument errors runs everywhere.
"""

import json
import os
import shutil
import subprocess

import consul
import pytest

from conftest import ROOT, mirra_bin, stop_process, wait_for

needs_buildah = pytest.mark.skipif(
    shutil.which("buildah") is None or shutil.which("busybox") is None or os.geteuid() != 0,
    reason="needs buildah, busybox-static and root",
)

TAG = "localhost/mirra:under-test"
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300, check=True, **kw)


def test_the_scripts_refuse_bad_arguments_clearly():
    """Runs everywhere: argument errors come before any tool is needed."""
    p = subprocess.run([str(ROOT / "scripts" / "build-image"), "--tagg", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown argument --tagg" in p.stderr, p.stderr
    p = subprocess.run([str(ROOT / "scripts" / "build-image"), "--binary", "/nonexistent/mirra"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.startswith("build-image: "), p.stderr
    p = subprocess.run([str(ROOT / "scripts" / "startup-time"), "/nonexistent/mirra"], capture_output=True, text=True)
    assert p.returncode == 1 and "no binary at /nonexistent/mirra" in p.stderr, p.stderr


@pytest.fixture(scope="module")
def rootfs():
    """The image built from the binary under test, mounted; yields its root."""
    run(str(ROOT / "scripts" / "build-image"), "--binary", mirra_bin(), "--tag", TAG)
    ctr = run("buildah", "from", TAG).stdout.strip()
    try:
        root = run("buildah", "mount", ctr).stdout.strip()
        yield root
    finally:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
        subprocess.run(["buildah", "rmi", "-f", TAG], capture_output=True)


def in_image(root, script, env):
    """Starts `/bin/sh -ec script` inside the image's root as its user."""
    return subprocess.Popen(
        [CHROOT, "--userspec=65532:65532", root, "/bin/sh", "-ec", script],
        env={"PATH": "/usr/local/bin:/bin", "HOME": "/home/nonroot", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@needs_buildah
def test_image_layout_and_config(rootfs):
    config = json.loads(run("buildah", "inspect", "--type", "image", TAG).stdout)
    oci = config["OCIv1"]["config"]
    assert oci["User"] == "65532:65532"
    assert oci.get("Entrypoint") in (None, [])
    assert os.readlink(os.path.join(rootfs, "usr/local/bin/consul-k8s-control-plane")) == "mirra"
    assert os.path.exists(os.path.join(rootfs, "bin/sh"))
    # Nothing in the image is writable by its user but /tmp and its home:
    # it runs with a read-only root filesystem.
    for top in ("bin", "usr", "etc", "lib", "lib64"):
        for dirpath, _, files in os.walk(os.path.join(rootfs, top)):
            for f in files:
                st = os.lstat(os.path.join(dirpath, f))
                assert st.st_uid == 0, os.path.join(dirpath, f)
    out = subprocess.run(
        [CHROOT, "--userspec=65532:65532", rootfs, "/bin/sh", "-ec",
         "id -u; mirra --version; consul-k8s-control-plane sync-catalog --help | head -1"],
        env={"PATH": "/usr/local/bin:/bin"}, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "65532"
    assert out.stdout.splitlines()[1].startswith("mirra ")
    # Whether podman can start it here: on these machines it cannot (see
    # the module docs); if that changes, the image must run as it is.
    p = subprocess.run(
        ["podman", "run", "--rm", "--network", "host", "--read-only", TAG, "mirra", "--version"],
        capture_output=True, text=True, timeout=120,
    ) if shutil.which("podman") else None
    if p is not None and p.returncode != 0:
        assert "setrlimit" in p.stderr or "OCI" in p.stderr, p.stderr
    elif p is not None:
        assert p.stdout.startswith("mirra ")


@needs_buildah
def test_image_runs_both_jobs(rootfs, kube_sandbox, consul_sandbox, kubectl):
    # The kubeconfig goes where the image's user can read it.
    kc = os.path.join(rootfs, "tmp", "kubeconfig")
    shutil.copy(kube_sandbox.kubeconfig, kc)
    os.chmod(kc, 0o644)
    crds = subprocess.run([mirra_bin(), "crds"], capture_output=True, text=True, check=True).stdout
    kubectl("apply", "-f", "-", input=crds)
    kubectl("create", "namespace", "team-a")
    kubectl("label", "namespace", "team-a", "team=true")
    sc = {
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"namespaceSelector": {"labelSelector": {"matchLabels": {"team": "true"}}},
                 "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "info"}, "data": {"p": "${PROJECT_NAME}"}}]},
    }
    kubectl("apply", "-f", "-", input=json.dumps(sc))
    # A Service with two ready endpoints in team-a.
    kubectl("apply", "-f", str(ROOT / "examples" / "03-service.yaml"))

    env = {"KUBECONFIG": "/tmp/kubeconfig"}
    mirror = in_image(
        rootfs,
        "mirra run --watch-namespace default --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0",
        env,
    )
    catalog = in_image(
        rootfs,
        "consul-k8s-control-plane sync-catalog -k8s-default-sync=true -listen=127.0.0.1:0 "
        "-allow-k8s-namespace=\"*\" -deny-k8s-namespace=kube-system "
        f"-consul-node-name=k8s-sync -http-addr={consul_sandbox.url}",
        env,
    )
    try:
        def copy():
            p = kubectl("get", "configmap", "info", "-n", "team-a", "-o", "json", check=False)
            return json.loads(p.stdout) if p.returncode == 0 else None

        cm = wait_for("the copy made by mirra run inside the image", copy)
        assert cm["data"] == {"p": "team-a"}
        host, port = consul_sandbox.addr.split(":")
        c = consul.Consul(host=host, port=int(port))

        def registered():
            _, nodes = c.catalog.service("web")
            return nodes if len(nodes) == 2 else None

        nodes = wait_for("web registered by sync-catalog inside the image", registered)
        assert {n["Node"] for n in nodes} == {"k8s-sync"}
        assert sorted(n["ServiceAddress"] for n in nodes) == ["10.1.0.11", "10.1.0.12"]
        assert mirror.poll() is None and catalog.poll() is None
    finally:
        for p in (mirror, catalog):
            stop_process(p)
