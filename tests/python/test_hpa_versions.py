"""HorizontalPodAutoscalers at both served versions, checked with the
official Python client's typed APIs (AutoscalingV1Api, AutoscalingV2Api)
and kubectl: a real v1.33 server stores them at autoscaling/v2 and converts
to and from autoscaling/v1, carrying what v1 cannot say in the
`autoscaling.alpha.kubernetes.io/*` annotations.
"""

import json

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

NS = "scaling"
METRICS = "autoscaling.alpha.kubernetes.io/metrics"


@pytest.fixture
def apis(kube_sandbox):
    api_client = config.new_client_from_config(config_file=kube_sandbox.kubeconfig)
    client.CoreV1Api(api_client).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    yield client.AutoscalingV1Api(api_client), client.AutoscalingV2Api(api_client)
    api_client.close()


def v2_body(name):
    return client.V2HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V2HorizontalPodAutoscalerSpec(
            scale_target_ref=client.V2CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web"),
            max_replicas=8,
            metrics=[
                client.V2MetricSpec(
                    type="Resource",
                    resource=client.V2ResourceMetricSource(
                        name="cpu", target=client.V2MetricTarget(type="Utilization", average_utilization=65)
                    ),
                ),
                client.V2MetricSpec(
                    type="Pods",
                    pods=client.V2PodsMetricSource(
                        metric=client.V2MetricIdentifier(name="requests"),
                        target=client.V2MetricTarget(type="AverageValue", average_value="100"),
                    ),
                ),
            ],
        ),
    )


def test_v2_objects_read_at_v1_and_survive_a_v1_replace(apis):
    v1, v2 = apis
    v2.create_namespaced_horizontal_pod_autoscaler(NS, v2_body("web"))
    got = v1.read_namespaced_horizontal_pod_autoscaler("web", NS)
    assert isinstance(got, client.V1HorizontalPodAutoscaler)
    assert got.api_version == "autoscaling/v1"
    assert got.spec.target_cpu_utilization_percentage == 65
    assert got.spec.min_replicas == 1
    assert json.loads(got.metadata.annotations[METRICS]) == [
        {"type": "Pods", "pods": {"metricName": "requests", "targetAverageValue": "100"}}
    ]
    got.spec.max_replicas = 12
    got.metadata.managed_fields = None
    v1.replace_namespaced_horizontal_pod_autoscaler("web", NS, got)
    stored = v2.read_namespaced_horizontal_pod_autoscaler("web", NS)
    assert stored.spec.max_replicas == 12
    assert [m.type for m in stored.spec.metrics] == ["Pods", "Resource"]
    assert stored.spec.metrics[0].pods.target.average_value == "100"
    assert not (stored.metadata.annotations or {})


def test_v1_objects_read_at_v2_with_the_default_target(apis):
    v1, v2 = apis
    body = client.V1HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name="plain"),
        spec=client.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=client.V1CrossVersionObjectReference(kind="Deployment", name="web"), max_replicas=3
        ),
    )
    created = v1.create_namespaced_horizontal_pod_autoscaler(NS, body)
    assert created.spec.target_cpu_utilization_percentage == 80
    assert created.status.current_replicas == 0 and created.status.desired_replicas == 0
    stored = v2.read_namespaced_horizontal_pod_autoscaler("plain", NS)
    assert [(m.resource.name, m.resource.target.average_utilization) for m in stored.spec.metrics] == [("cpu", 80)]
    patched = v1.patch_namespaced_horizontal_pod_autoscaler(
        "plain", NS, {"spec": {"targetCPUUtilizationPercentage": 40}}
    )
    assert patched.spec.target_cpu_utilization_percentage == 40
    listed = v1.list_namespaced_horizontal_pod_autoscaler(NS)
    assert [h.spec.target_cpu_utilization_percentage for h in listed.items] == [40]
    v1.delete_namespaced_horizontal_pod_autoscaler("plain", NS)
    with pytest.raises(ApiException) as e:
        v2.read_namespaced_horizontal_pod_autoscaler("plain", NS)
    assert e.value.status == 404


def test_malformed_round_trip_annotation_is_a_400(apis):
    v1, v2 = apis
    body = client.V1HorizontalPodAutoscaler(
        metadata=client.V1ObjectMeta(name="bad", annotations={METRICS: "not json"}),
        spec=client.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=client.V1CrossVersionObjectReference(kind="Deployment", name="web"), max_replicas=3
        ),
    )
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_horizontal_pod_autoscaler(NS, body)
    assert e.value.status == 400
    assert json.loads(e.value.body)["reason"] == "BadRequest"
    assert v2.list_namespaced_horizontal_pod_autoscaler(NS).items == []


def test_kubectl_reads_both_versions(kubectl, apis):
    _, v2 = apis
    v2.create_namespaced_horizontal_pod_autoscaler(NS, v2_body("web"))
    # kubectl's short-name expansion drops the version, so the full
    # resource name asks for v1.
    as_v1 = json.loads(kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-n", NS, "-o", "json").stdout)
    assert as_v1["apiVersion"] == "autoscaling/v1"
    assert as_v1["spec"]["targetCPUUtilizationPercentage"] == 65
    preferred = json.loads(kubectl("get", "hpa", "web", "-n", NS, "-o", "json").stdout)
    assert preferred["apiVersion"] == "autoscaling/v2"
    # The server prints the same columns whichever version is asked for.
    a = kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "-n", NS).stdout.splitlines()
    b = kubectl("get", "horizontalpodautoscalers.v2.autoscaling", "-n", NS).stdout.splitlines()
    assert a[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert a[0] == b[0] and a[1].split()[:6] == b[1].split()[:6]
    explained = kubectl("explain", "hpa.spec.targetCPUUtilizationPercentage", "--api-version=autoscaling/v1").stdout
    assert "targetCPUUtilizationPercentage" in explained
