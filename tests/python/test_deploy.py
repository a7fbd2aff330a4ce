"""The kustomize bases in deploy/ are valid and apply cleanly with kubectl."""

import json

from conftest import ROOT


def test_mirror_base_applies_and_serves_syncconfigs(kubectl):
    out = kubectl("apply", "-k", str(ROOT / "deploy")).stdout
    assert "namespace/mirra-system created" in out
    assert "customresourcedefinition.apiextensions.k8s.io/syncconfigs.sync.appuio.ch created" in out
    assert "deployment.apps/mirra-mirror created" in out
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-mirror", "-n", "mirra-system", "-o", "json").stdout
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "run"
    # The CRD is served at once: SyncConfigs can be listed.
    kubectl("get", "syncconfigs", "-A")
    # Applying again changes nothing. kubectl reports a PodDisruptionBudget
    # "configured" on every apply, against any server: its selector's patch
    # strategy is "replace", so the computed patch is never empty.
    again = kubectl("apply", "-k", str(ROOT / "deploy")).stdout
    lines = [line for line in again.splitlines() if not line.startswith("poddisruptionbudget.")]
    assert not any("created" in line or "configured" in line for line in lines), again


def flag_value(args, name, default):
    """The value of a sync-catalog flag in a container's args, in any of the
    spellings mirra accepts (-name=v, --name=v, -name v, --name v)."""
    for i, arg in enumerate(args):
        for dashes in ("-", "--"):
            flag = dashes + name
            if arg.startswith(flag + "="):
                return arg[len(flag) + 1:]
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
    return default


def probe_port(container, port):
    """The container port a probe's `port` (a name or a number) refers to."""
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    assert port in named, f"probe port {port!r} is not one of the container's ports {named}"
    return named[port]


def catalog_serving_ports(container):
    """(health port, metrics port) sync-catalog serves with these args:
    /health/ready and /healthz on -listen (default :8080), /metrics on
    -metrics-port (default 20300), as crates/mirra/src/serve.rs defines."""
    args = container["args"]
    listen = flag_value(args, "listen", ":8080")
    return int(listen.rsplit(":", 1)[1]), int(flag_value(args, "metrics-port", "20300"))


def test_catalog_base_applies(kubectl):
    out = kubectl("apply", "-k", str(ROOT / "deploy" / "catalog")).stdout
    assert "clusterrole.rbac.authorization.k8s.io/mirra-catalog created" in out
    assert "deployment.apps/mirra-catalog created" in out
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-catalog", "-n", "mirra-system", "-o", "json").stdout
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "sync-catalog"
    health, metrics = catalog_serving_ports(container)
    # Both probes must hit the port that serves them, or every pod is
    # killed by its liveness probe and never becomes ready.
    for probe in ("livenessProbe", "readinessProbe"):
        port = probe_port(container, container[probe]["httpGet"]["port"])
        assert port == health, f"{probe} targets {port}, sync-catalog serves health on {health}"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert probe_port(container, "metrics") == metrics


def test_the_rbac_kinds_overlay_grants_and_allows_them(kubectl):
    base = kubectl("kustomize", str(ROOT / "deploy")).stdout
    # The default install may not copy the kinds that grant access.
    assert "rolebindings" not in base and "serviceaccounts, " not in base
    kubectl("apply", "-k", str(ROOT / "deploy"))
    out = kubectl("apply", "-k", str(ROOT / "deploy" / "mirror-rbac-kinds")).stdout
    assert "clusterrole.rbac.authorization.k8s.io/mirra-mirror-rbac-kinds created" in out
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-mirror", "-n", "mirra-system", "-o", "json").stdout
    )
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    allowed = [a.split("=", 1)[1] for a in args if a.startswith("--allow-kind=")]
    assert allowed == [
        "ConfigMap", "Secret", "LimitRange", "ResourceQuota", "NetworkPolicy.networking.k8s.io",
        "ServiceAccount", "Role.rbac.authorization.k8s.io", "RoleBinding.rbac.authorization.k8s.io",
        "ClusterRole.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io",
    ]
    role = json.loads(kubectl("get", "clusterrole", "mirra-mirror-rbac-kinds", "-o", "json").stdout)
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == {("", "serviceaccounts"), ("rbac.authorization.k8s.io", "roles"),
                       ("rbac.authorization.k8s.io", "rolebindings"),
                       ("rbac.authorization.k8s.io", "clusterroles"),
                       ("rbac.authorization.k8s.io", "clusterrolebindings")}


def test_the_tenant_overlay_is_a_cluster_role_bound_nowhere(kubectl):
    out = kubectl("apply", "-k", str(ROOT / "deploy" / "mirror-tenants")).stdout
    assert "clusterrole.rbac.authorization.k8s.io/mirra-mirror-tenant created" in out
    # Bound per tenant namespace by the operator: the overlay itself binds
    # nothing, so mirra may impersonate no ServiceAccount until then.
    assert "binding" not in out, out
    role = json.loads(kubectl("get", "clusterrole", "mirra-mirror-tenant", "-o", "json").stdout)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["serviceaccounts"],
                              "verbs": ["list", "watch", "impersonate"]}]


def service_verbs(rules):
    """The verbs the rules grant on core Services."""
    verbs = set()
    for rule in rules:
        if "" in rule.get("apiGroups", []) and "services" in rule.get("resources", []):
            verbs.update(rule.get("verbs", []))
    return verbs


def test_catalog_writes_services_only_in_its_write_namespace(kubectl):
    kubectl("apply", "-k", str(ROOT / "deploy" / "catalog"))
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-catalog", "-n", "mirra-system", "-o", "json").stdout
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    write_ns = flag_value(container["args"], "k8s-write-namespace", "default")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    subject = {"kind": "ServiceAccount", "name": account, "namespace": "mirra-system"}

    # Cluster-wide: Services are read, never written.
    cluster_role = json.loads(kubectl("get", "clusterrole", "mirra-catalog", "-o", "json").stdout)
    assert service_verbs(cluster_role["rules"]) == {"get", "list", "watch"}
    binding = json.loads(
        kubectl("get", "clusterrolebinding", "mirra-catalog", "-o", "json").stdout
    )
    assert subject in binding["subjects"]

    # The write verbs: a Role in the namespace the Deployment writes to,
    # bound to the Deployment's service account.
    bindings = json.loads(
        kubectl("get", "rolebindings", "-n", write_ns, "-o", "json").stdout
    )["items"]
    granted = set()
    for b in bindings:
        if subject not in b.get("subjects", []):
            continue
        assert b["roleRef"]["kind"] == "Role", b["metadata"]["name"]
        role = json.loads(
            kubectl("get", "role", b["roleRef"]["name"], "-n", write_ns, "-o", "json").stdout
        )
        granted |= service_verbs(role["rules"])
    assert {"create", "patch", "delete"} <= granted, granted

    # Nowhere else: no other namespace's Role grants mirra Service writes.
    everywhere = json.loads(kubectl("get", "rolebindings", "-A", "-o", "json").stdout)["items"]
    for b in everywhere:
        ns = b["metadata"]["namespace"]
        if ns == write_ns or subject not in b.get("subjects", []):
            continue
        role = json.loads(
            kubectl("get", "role", b["roleRef"]["name"], "-n", ns, "-o", "json").stdout
        )
        assert not service_verbs(role["rules"]) & {"create", "patch", "update", "delete"}, (ns, role)

    # Applying again changes nothing (but the PodDisruptionBudget, which
    # kubectl always reports configured: see the mirror base's test).
    again = kubectl("apply", "-k", str(ROOT / "deploy" / "catalog")).stdout
    lines = [line for line in again.splitlines() if not line.startswith("poddisruptionbudget.")]
    assert not any("created" in line or "configured" in line for line in lines), again


def test_the_consul_chart_rbac_applies(kubectl):
    """The extra RBAC mirra needs as the consul Helm chart's sync-catalog
    (docs/migrating-from-consul-k8s.md) is valid and names the chart's
    ServiceAccount."""
    kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: consul}\n")
    out = kubectl("apply", "-k", str(ROOT / "deploy" / "consul-chart")).stdout
    assert "clusterrole.rbac.authorization.k8s.io/mirra-consul-sync-catalog created" in out
    assert "rolebinding.rbac.authorization.k8s.io/mirra-consul-sync-catalog-write created" in out
    binding = json.loads(
        kubectl("get", "clusterrolebinding", "mirra-consul-sync-catalog", "-o", "json").stdout
    )
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "consul-sync-catalog", "namespace": "consul"}
    ]
    role = json.loads(kubectl("get", "clusterrole", "mirra-consul-sync-catalog", "-o", "json").stdout)
    nodes = [r for r in role["rules"] if "nodes" in r["resources"]]
    assert nodes and {"list", "watch"} <= set(nodes[0]["verbs"])


def test_bases_pass_a_server_side_dry_run_and_are_hardened(kubectl):
    """`kubectl apply -k ... --dry-run=server` is accepted as it is (nothing
    stored), and the rendered objects carry what a production install
    needs: the image set in one place, two replicas with leader election,
    a PodDisruptionBudget, the restricted Pod Security profile, resources,
    and a NetworkPolicy that allows only the ports mirra uses."""
    # A server-side dry run cannot create into a namespace that does not
    # exist yet (it is not stored either), as on a real server.
    kubectl("create", "namespace", "mirra-system")
    for base, component, health, metrics in (
        ("deploy", "mirror", 8081, 8080),
        ("deploy/catalog", "catalog", 8080, 20300),
    ):
        dry = kubectl("apply", "-k", str(ROOT / base), "--dry-run=server").stdout
        assert "(server dry run)" in dry, dry
        assert f"deployment.apps/mirra-{component} created (server dry run)" in dry, dry
        stored = json.loads(kubectl("get", "deployments,poddisruptionbudgets,networkpolicies",
                                    "-n", "mirra-system", "-o", "json").stdout)
        assert stored["items"] == [], "a dry run stored objects"
        rendered = kubectl("kustomize", str(ROOT / base)).stdout
        objects = {}
        for doc in rendered.split("\n---\n"):
            obj = json.loads(kubectl("create", "--dry-run=client", "-o", "json", "-f", "-", input=doc).stdout)
            objects[(obj["kind"], obj["metadata"]["name"])] = obj
        ns = objects[("Namespace", "mirra-system")]
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        dep = objects[("Deployment", f"mirra-{component}")]
        spec = dep["spec"]["template"]["spec"]
        container = spec["containers"][0]
        assert container["image"] == "mirra:dev"
        assert dep["spec"]["replicas"] == 2
        assert "--leader-elect" in container["args"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
        pdb = objects[("PodDisruptionBudget", f"mirra-{component}")]
        assert pdb["spec"]["minAvailable"] == 1
        assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
        policy = objects[("NetworkPolicy", f"mirra-{component}")]
        assert policy["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
        assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
        ingress_ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
        assert ingress_ports == {health, metrics}
        container_ports = {p["containerPort"] for p in container["ports"]}
        assert container_ports == {health, metrics}


def readme_install_commands():
    """The commands of README's "Install in three commands", in order."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- install:start -->", 1)[1].split("<!-- install:end -->", 1)[0]
    return [line for line in block.splitlines()
            if line.strip() and not line.startswith(("#", "```"))]


def test_the_readme_install_commands_work_as_written(kubectl):
    import subprocess

    commands = readme_install_commands()
    assert len(commands) == 3, commands
    assert commands[0].startswith("docker build"), commands
    image = "registry.example.com/platform/mirra:0.1.0"
    env = dict(kubectl.env, IMAGE=image)
    # Steps 2 and 3 as written (step 1 needs a registry and Docker).
    for command in commands[1:]:
        subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env,
                       check=True, capture_output=True, text=True, timeout=120)
    kubectl("get", "crd", "syncconfigs.sync.appuio.ch")
    kubectl("get", "serviceaccount", "mirra-mirror", "-n", "mirra-system")
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-mirror", "-n", "mirra-system", "-o", "json").stdout
    )
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    assert "--leader-elect" in container["args"]
    kubectl("get", "poddisruptionbudget", "mirra-mirror", "-n", "mirra-system")
    kubectl("get", "networkpolicy", "-n", "mirra-system", "mirra-mirror")
    # Running them again (an upgrade to the same image) changes nothing.
    again = subprocess.run(["bash", "-euo", "pipefail", "-c", commands[2]], cwd=ROOT, env=env,
                           check=True, capture_output=True, text=True, timeout=120).stdout
    lines = [line for line in again.splitlines() if not line.startswith("poddisruptionbudget.")]
    assert not any("created" in line or "configured" in line for line in lines), again
