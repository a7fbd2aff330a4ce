"""kube-sandbox's review resources, componentstatuses and pod subresources,
checked with the official Python client (`kubernetes`) and kubectl.

The sandbox answers as a v1.33 server whose only token authenticator is
the ServiceAccount one: every request is the anonymous user, a TokenReview
authenticates only the tokens `serviceaccounts/token` issued, and the
authorizer allows everything.
"""

import json

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException


@pytest.fixture
def api_client(kube_sandbox):
    c = config.new_client_from_config(config_file=kube_sandbox.kubeconfig)
    yield c
    c.close()


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)


def revision(core):
    """The store's revision, read from a list (reviews must not move it)."""
    return int(core.list_namespace().metadata.resource_version)


def pod(name, containers=("app",), labels=None):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {"app": "web"}),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name=c, image="nginx") for c in containers]
        ),
    )


def test_typed_reviews_answer_as_the_anonymous_user_and_refuse_unknown_tokens(api_client, core):
    before = revision(core)
    authn = client.AuthenticationV1Api(api_client)
    tr = authn.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token="some-token"))
    )
    assert not tr.status.authenticated
    assert tr.status.error == "invalid bearer token"
    ssr = authn.create_self_subject_review(client.V1SelfSubjectReview())
    assert ssr.status.user_info.username == "system:anonymous"

    authz = client.AuthorizationV1Api(api_client)
    attrs = client.V1ResourceAttributes(namespace="default", verb="delete", resource="secrets")
    sar = authz.create_subject_access_review(
        client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(user="jane", resource_attributes=attrs)
        )
    )
    assert sar.status.allowed is True and not sar.status.denied
    lsar = authz.create_namespaced_local_subject_access_review(
        "default",
        client.V1LocalSubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(user="jane", resource_attributes=attrs)
        ),
    )
    assert lsar.status.allowed is True
    ssar = authz.create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                non_resource_attributes=client.V1NonResourceAttributes(path="/healthz", verb="get")
            )
        )
    )
    assert ssar.status.allowed is True
    rules = authz.create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(
            spec=client.V1SelfSubjectRulesReviewSpec(namespace="default")
        )
    )
    assert rules.status.resource_rules[0].verbs == ["*"]
    assert rules.status.non_resource_rules[0].non_resource_urls == ["*"]
    assert rules.status.incomplete is False
    assert revision(core) == before


def test_invalid_reviews_are_refused(api_client, core):
    authz = client.AuthorizationV1Api(api_client)
    with pytest.raises(ApiException) as e:
        authz.create_subject_access_review(
            client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(user="jane"))
        )
    assert e.value.status == 422
    body = json.loads(e.value.body)
    assert body["reason"] == "Invalid"
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in body[
        "message"
    ]
    with pytest.raises(ApiException) as e:
        authz.create_namespaced_local_subject_access_review(
            "default",
            client.V1LocalSubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user="jane",
                    resource_attributes=client.V1ResourceAttributes(namespace="other", verb="get"),
                )
            ),
        )
    assert e.value.status == 422
    assert "must match metadata.namespace" in json.loads(e.value.body)["message"]


def test_component_statuses_report_the_missing_control_plane(core):
    statuses = {c.metadata.name: c.conditions[0] for c in core.list_component_status().items}
    assert set(statuses) == {"scheduler", "controller-manager", "etcd-0"}
    assert statuses["etcd-0"].status == "True"
    assert statuses["scheduler"].status == "False"
    assert "127.0.0.1:10259: connect: connection refused" in statuses["scheduler"].message


def test_binding_assigns_a_node_once(core):
    core.create_namespaced_pod("default", pod("p"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name="node-1"),
    )
    # The server answers a Status, which the client's V1Binding model
    # cannot hold (it requires `target`), so the answer is read raw.
    resp = core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
    assert core.read_namespaced_pod("p", "default").spec.node_name == "node-1"
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert e.value.status == 409
    assert 'pod p is already assigned to node "node-1"' in json.loads(e.value.body)["message"]


def test_eviction_honours_a_budget_that_allows_no_disruption(api_client, core):
    policy = client.PolicyV1Api(api_client)
    core.create_namespaced_pod("default", pod("web"))
    running = core.read_namespaced_pod_status("web", "default")
    running.status.phase = "Running"
    running.status.conditions = [client.V1PodCondition(type="Ready", status="True")]
    core.replace_namespaced_pod_status("web", "default", running)
    policy.create_namespaced_pod_disruption_budget(
        "default",
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels={"app": "web"})
            ),
        ),
    )
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="web"))
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_eviction("web", "default", eviction)
    assert e.value.status == 429
    assert "violate the pod's disruption budget" in json.loads(e.value.body)["message"]
    core.read_namespaced_pod("web", "default")

    # A pending pod is evicted without a budget check.
    core.create_namespaced_pod("default", pod("pending", labels={"app": "other"}))
    core.create_namespaced_pod_eviction(
        "pending", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="pending"))
    )
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("pending", "default")
    assert e.value.status == 404


def test_pod_log_errors(core):
    core.create_namespaced_pod("default", pod("two", containers=("a", "b")))
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log("two", "default")
    assert e.value.status == 400
    assert "a container name must be specified for pod two, choose one of: [a b]" in e.value.body
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log("two", "default", container="c")
    assert e.value.status == 400
    # An unscheduled pod has no log location: its log is empty.
    assert core.read_namespaced_pod_log("two", "default", container="a") == ""


def test_kubectl_auth_and_component_statuses(kubectl):
    assert kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    listed = kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in listed
    whoami = kubectl("auth", "whoami").stdout
    assert "system:anonymous" in whoami and "system:unauthenticated" in whoami
    cs = kubectl("get", "cs")
    assert "v1 ComponentStatus is deprecated in v1.19+" in cs.stderr
    lines = cs.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows == {"scheduler": "Unhealthy", "controller-manager": "Unhealthy", "etcd-0": "Healthy"}


def test_kubectl_logs_of_a_missing_container(kubectl):
    kubectl("run", "p", "--image=nginx", "--restart=Never")
    p = kubectl("logs", "p", "-c", "nope", check=False)
    assert p.returncode != 0
    assert "container nope is not valid for pod p" in p.stderr


def test_kubectl_drain_evicts_through_the_eviction_subresource(kubectl, core):
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
    bound = pod("on-n1")
    bound.spec.node_name = "n1"
    core.create_namespaced_pod("default", bound)
    p = kubectl("drain", "n1", "--force", "--timeout=60s")
    assert "evicted" in p.stdout, p.stdout + p.stderr
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("on-n1", "default")
    assert e.value.status == 404
    assert core.read_node("n1").spec.unschedulable is True


def test_service_account_tokens_are_issued_and_reviewed(api_client, core):
    core.create_namespaced_service_account(
        "default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="web"))
    )
    uid = core.read_namespaced_service_account("web", "default").metadata.uid
    before = revision(core)
    tr = core.create_namespaced_service_account_token(
        "web",
        "default",
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["vault"])),
    )
    assert tr.spec.expiration_seconds == 3600
    assert tr.status.token.count(".") == 2
    authn = client.AuthenticationV1Api(api_client)
    review = authn.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=tr.status.token, audiences=["vault"]))
    )
    assert review.status.authenticated is True
    assert review.status.user.username == "system:serviceaccount:default:web"
    assert review.status.user.uid == uid
    assert review.status.audiences == ["vault"]
    # Reviewed for the API server's own audience, the vault token fails.
    review = authn.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=tr.status.token))
    )
    assert not review.status.authenticated
    assert review.status.error.startswith('token audiences ["vault"] is invalid for the target audiences')
    with pytest.raises(ApiException) as e:
        core.create_namespaced_service_account_token(
            "nope", "default", client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
        )
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == 'serviceaccounts "nope" not found'
    assert revision(core) == before


def test_kubectl_create_token(kubectl):
    """kubectl sends the TokenRequest as protobuf; the token it prints is
    one a TokenReview authenticates."""
    # `kubectl create serviceaccount` sends protobuf too; apply sends JSON.
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}}
    kubectl("apply", "-f", "-", input=json.dumps(sa))
    token = kubectl("create", "token", "builder", "--duration=20m").stdout.strip()
    assert token.count(".") == 2
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    out = json.loads(
        kubectl("create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-", input=json.dumps(review)).stdout
    )
    assert out["status"]["authenticated"] is True
    assert out["status"]["user"]["username"] == "system:serviceaccount:default:builder"
    too_short = kubectl("create", "token", "builder", "--duration=1m", check=False)
    assert too_short.returncode != 0
    assert "may not specify a duration less than 10 minutes" in too_short.stderr
