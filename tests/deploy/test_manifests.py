"""The Kubernetes manifests and the compose file against their published schemas, offline.

Kubernetes: kubernetes-validate carries the API's JSON schemas for each release; strict mode
refuses unknown fields, so a misspelt key fails as it would in `kubectl apply --validate=strict`.
Compose: the Compose Specification's schema (compose-spec/compose-spec, Apache-2.0), as
check-jsonschema ships it in check_jsonschema/builtin_schemas/vendor/compose-spec.json.
Then what the schemas cannot say: one GPU per worker pod, slots that never meet, probes, and
every name one object uses that another must define.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.conf import settings

from .layout import DEPLOY, K8S, ROOT, compose, k8s_documents

# The oldest release these manifests use fields of (StatefulSet ordinals and the pod-index
# label are on by default from 1.31), and the newest whose schemas the package carries.
K8S_VERSIONS = ("1.31", kubernetes_validate.latest_version())
DOCUMENTS = list(k8s_documents())
OUR_IMAGES = "registry.example.edu/courseware/"


def doc_id(item: tuple[Path, dict[str, Any]]) -> str:
    path, document = item
    return f"{path.name}:{document['kind']}/{document['metadata']['name']}"


def objects(kind: str) -> list[dict[str, Any]]:
    return [document for _, document in DOCUMENTS if document["kind"] == kind]


def workloads() -> list[dict[str, Any]]:
    return [d for _, d in DOCUMENTS if d["kind"] in ("Deployment", "StatefulSet")]


def pod_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = workload["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def env_value(container: dict[str, Any], name: str) -> Any:
    for item in container.get("env", []):
        if item["name"] == name:
            return item.get("value", item.get("valueFrom"))
    return None


def worker_sets() -> list[dict[str, Any]]:
    return [w for w in objects("StatefulSet") if w["metadata"]["name"].startswith("worker-")]


@cache
def compose_schema() -> dict[str, Any]:
    vendor = importlib.resources.files("check_jsonschema") / "builtin_schemas" / "vendor"
    schema: dict[str, Any] = json.loads((vendor / "compose-spec.json").read_text())
    return schema


def compose_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(compose_schema())
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


# ------------------------------------------------------------------------------ Kubernetes


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("item", DOCUMENTS, ids=[doc_id(i) for i in DOCUMENTS])
def test_every_manifest_is_valid_kubernetes(item: tuple[Path, dict[str, Any]], version: str):
    _, document = item
    kubernetes_validate.validate(document, version, strict=True)


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(lambda pod: pod.__setitem__("contaners", pod.pop("containers")), id="typo"),
        pytest.param(
            lambda pod: pod["containers"][0]["resources"]["limits"].__setitem__(
                "nvidia.com/gpu", {"count": 1}
            ),
            id="gpu-count-not-a-quantity",
        ),
        pytest.param(
            lambda pod: pod["containers"][0]["readinessProbe"].__setitem__("exec", "healthcheck"),
            id="probe-exec-not-an-object",
        ),
    ],
)
def test_a_broken_manifest_is_rejected(breakage: Any):
    worker = copy.deepcopy(next(w for w in worker_sets() if "cuda" in w["metadata"]["name"]))
    breakage(worker["spec"]["template"]["spec"])
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(worker, K8S_VERSIONS[-1], strict=True)


def test_the_kustomization_applies_every_manifest_but_the_example_secret():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == {f for f in files if ".example." not in f}
    assert len(kustomization["resources"]) == len(set(kustomization["resources"]))


def test_gpu_workers_take_one_gpu_per_pod_on_gpu_nodes():
    gpu_sets = [w for w in worker_sets() if "cuda" in w["metadata"]["name"]]
    assert gpu_sets
    for workload in gpu_sets:
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]  # one worker per pod, nothing beside it
        kind = env_value(container, "WORKER_KIND")
        assert kind.startswith("cuda-") and workload["metadata"]["name"] == f"worker-{kind}"
        resources = container["resources"]
        assert resources["limits"]["nvidia.com/gpu"] == 1
        assert resources["requests"]["nvidia.com/gpu"] == 1
        assert pod["nodeSelector"]["nvidia.com/gpu.product"]
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
            "tolerations"
        ]
        # The GPU the device plugin names in NVIDIA_VISIBLE_DEVICES, never a fixed index.
        assert env_value(container, "GPU") == "visible"


def test_worker_pods_are_guaranteed_whole_cores_and_outlive_a_grading():
    for workload in worker_sets():
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["args"] == ["deploy/worker.sh"]
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        for resource in ("cpu", "memory"):
            assert requests[resource] == limits[resource], (workload["metadata"]["name"], resource)
        assert int(requests["cpu"]) >= 2  # one core to time on, one for the trusted side
        # A drain's SIGTERM lets the grading finish: longer than the task's hard time limit.
        assert pod["terminationGracePeriodSeconds"] > settings.CELERY_TASK_TIME_LIMIT


def test_no_two_workers_of_the_cluster_share_a_slot():
    taken: dict[int, str] = {}
    for workload in worker_sets():
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        slot = env_value(container, "SLOT")
        assert slot == {
            "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
        }
        start = workload["spec"].get("ordinals", {}).get("start", 0)
        for index in range(start, start + workload["spec"]["replicas"]):
            assert index not in taken, f"slot {index}: {taken.get(index)} and {workload}"
            taken[index] = workload["metadata"]["name"]
    # A sandbox's companion uid is 1000 slots above its own (graders/sandbox/launch.py).
    assert max(taken) < 1000


def test_exactly_one_scheduler():
    (beat,) = [w for w in workloads() if w["metadata"]["name"] == "beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"


def test_the_web_pod_sets_up_then_serves_with_probes_the_site_answers():
    (web,) = [w for w in workloads() if w["metadata"]["name"] == "web"]
    (setup,) = web["spec"]["template"]["spec"]["initContainers"]
    assert setup["args"] == ["deploy/web.sh", "setup"]
    containers = {c["name"]: c for c in web["spec"]["template"]["spec"]["containers"]}
    assert containers["web"]["args"] == ["deploy/web.sh", "serve"]
    (config,) = [c for c in objects("ConfigMap") if c["metadata"]["name"] == "courseware-config"]
    allowed = config["data"]["DJANGO_ALLOWED_HOSTS"].split(",")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        http = containers["web"][probe]["httpGet"]
        assert http["path"] == "/login/"
        (host,) = [h["value"] for h in http["httpHeaders"] if h["name"] == "Host"]
        assert host in allowed
    for name in ("nginx",):
        assert containers[name]["readinessProbe"] and containers[name]["livenessProbe"]


def test_every_config_map_and_secret_a_pod_reads_is_defined():
    defined = {(d["kind"], d["metadata"]["name"]) for _, d in DOCUMENTS}
    for workload in workloads():
        spec = workload["spec"]["template"]["spec"]
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in defined
        for container in pod_containers(workload):
            for source in container.get("envFrom", []):
                kind, ref = next(iter(source.items()))
                expected = "ConfigMap" if kind == "configMapRef" else "Secret"
                assert (expected, ref["name"]) in defined
            for item in container.get("env", []):
                secret = item.get("valueFrom", {}).get("secretKeyRef")
                if secret:
                    (example,) = objects("Secret")
                    assert secret["name"] == example["metadata"]["name"]
                    assert secret["key"] in example["stringData"]


def test_the_nginx_config_map_is_the_template_word_for_word():
    (nginx,) = [c for c in objects("ConfigMap") if c["metadata"]["name"] == "courseware-nginx"]
    template = (DEPLOY / "nginx" / "courseware.conf.template").read_text()
    assert nginx["data"]["courseware.conf.template"] == template


def test_our_containers_run_deploy_scripts_that_exist():
    seen = set()
    for workload in workloads():
        for container in pod_containers(workload):
            if not container["image"].startswith(OUR_IMAGES):
                continue
            commands = [container["args"]]
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if "exec" in container.get(probe, {}):
                    commands.append(container[probe]["exec"]["command"])
            for command in commands:
                script = ROOT / command[0]
                assert script.parent == DEPLOY and script.is_file(), command
                assert script.stat().st_mode & 0o111, f"{script} is not executable"
                seen.add(script.name)
    assert {"web.sh", "beat.sh", "worker.sh", "flower.sh", "healthcheck.sh"} <= seen


# ------------------------------------------------------------------------------ compose


def test_the_compose_file_is_valid_compose():
    assert compose_errors(compose()) == []


@pytest.mark.parametrize(
    ("where", "change"),
    [
        (("services", "worker-gpu0", "deploy", "resources", "reservations", "devices", 0),
         ("capabilites", ["gpu"])),
        (("services", "web", "healthcheck"), ("intervall", "15s")),
        (("services", "redis"), ("restart_policy", "always")),
    ],
    ids=["gpu-reservation-typo", "healthcheck-key-typo", "unknown-service-key"],
)  # fmt: skip
def test_a_broken_compose_file_is_rejected(where: tuple[Any, ...], change: tuple[str, Any]):
    document = copy.deepcopy(compose())
    node = document
    for key in where:
        node = node[key]
    node[change[0]] = change[1]
    assert compose_errors(document)


def test_every_compose_service_has_a_health_check():
    for name, service in compose()["services"].items():
        assert service["healthcheck"]["test"], name


def test_compose_workers_one_device_each_and_distinct_slots():
    services = compose()["services"]
    workers = {n: s for n, s in services.items() if s.get("command") == ["deploy/worker.sh"]}
    assert {s["environment"]["WORKER_KIND"] for s in workers.values()} >= {"cpu"}
    slots = [s["environment"]["SLOT"] for s in workers.values()]
    assert len(slots) == len(set(slots)), slots
    gpu_workers = {n: s for n, s in workers.items() if "GPU" in s["environment"]}
    assert gpu_workers
    for name, service in gpu_workers.items():
        (device,) = service["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and "gpu" in device["capabilities"], name
        assert device["device_ids"] == [service["environment"]["GPU"]], name
        assert service["stop_grace_period"] == "700s"
        assert int(service["stop_grace_period"][:-1]) > settings.CELERY_TASK_TIME_LIMIT


def test_compose_runs_deploy_scripts_and_files_that_exist():
    for name, service in compose()["services"].items():
        build = service.get("build")
        if build:
            context = (DEPLOY / build["context"]).resolve()
            assert context == ROOT
            assert (context / build["dockerfile"]).is_file(), name
            script = ROOT / service["command"][0]
            assert script.parent == DEPLOY and script.is_file(), name
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).is_file(), (name, mount)
        test = service["healthcheck"]["test"]
        if test[1].startswith("deploy/"):
            assert (ROOT / test[1]).is_file(), name
    assert set(compose()["volumes"]) == {
        m.split(":")[0]
        for s in compose()["services"].values()
        for m in s.get("volumes", [])
        if not m.startswith(".")
    }
