"""Checks the deployment manifests hold what issue 5 asks of them.

    check_manifests.py k8s gpu|cpu RENDERED.yaml   # output of kubectl kustomize
    check_manifests.py compose docker-compose.yml

Exits non-zero with one line per broken property.
"""
import sys

import yaml

GRPC_PORT = 50051
METRICS_PORT = 9464


class Checker:
    def __init__(self):
        self.failures = []

    def expect(self, condition, what):
        if not condition:
            self.failures.append(what)
        return condition


def _one(docs, kind, check):
    found = [d for d in docs if d.get("kind") == kind]
    check.expect(len(found) == 1, f"want one {kind}, found {len(found)}")
    return found[0] if found else {}


def check_k8s(variant, docs, check):
    deployment = _one(docs, "Deployment", check)
    service = _one(docs, "Service", check)
    config_map = _one(docs, "ConfigMap", check)
    budget = _one(docs, "PodDisruptionBudget", check)

    template = deployment.get("spec", {}).get("template", {})
    pod = template.get("spec", {})
    labels = template.get("metadata", {}).get("labels", {})
    annotations = template.get("metadata", {}).get("annotations", {})
    containers = pod.get("containers", [])
    check.expect(len(containers) == 1, "Deployment: want one container")
    container = containers[0] if containers else {}

    limits = container.get("resources", {}).get("limits", {})
    requests = container.get("resources", {}).get("requests", {})
    if variant == "gpu":
        check.expect(str(limits.get("nvidia.com/gpu")) == "1", "gpu: limits nvidia.com/gpu: 1")
        check.expect(container.get("image", "").endswith(":gpu"), "gpu: image tag gpu")
    else:
        check.expect("nvidia.com/gpu" not in limits and "nvidia.com/gpu" not in requests,
                     "cpu: no nvidia.com/gpu resource")
        check.expect(container.get("image", "").endswith(":cpu"), "cpu: image tag cpu")
        check.expect(config_map.get("data", {}).get("NORMSERVE_BACKEND") == "cpu",
                     "cpu: ConfigMap NORMSERVE_BACKEND=cpu")
    check.expect("cpu" in requests and "memory" in requests and "memory" in limits,
                 "container resources: cpu/memory requests, memory limit")

    for probe in ("readinessProbe", "livenessProbe"):
        grpc = container.get(probe, {}).get("grpc", {})
        check.expect(grpc.get("port") == GRPC_PORT, f"{probe}: grpc port {GRPC_PORT}")

    pod_security = pod.get("securityContext", {})
    security = container.get("securityContext", {})
    check.expect(pod_security.get("runAsNonRoot") is True, "pod securityContext.runAsNonRoot")
    check.expect(isinstance(pod_security.get("runAsUser"), int) and pod_security["runAsUser"] > 0,
                 "pod securityContext.runAsUser: a non-zero uid")
    check.expect(security.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    check.expect(security.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false")
    check.expect(security.get("capabilities", {}).get("drop") == ["ALL"], "capabilities drop ALL")

    check.expect(annotations.get("prometheus.io/scrape") == "true", "prometheus.io/scrape")
    check.expect(str(annotations.get("prometheus.io/port")) == str(METRICS_PORT),
                 "prometheus.io/port")

    env_sources = [e.get("configMapRef", {}).get("name") for e in container.get("envFrom", [])]
    check.expect(config_map.get("metadata", {}).get("name") in env_sources,
                 "container envFrom the ConfigMap")
    check.expect(all(k.startswith("NORMSERVE_") and isinstance(v, str)
                     for k, v in config_map.get("data", {}).items()),
                 "ConfigMap data: NORMSERVE_* string values")
    ports = {p.get("containerPort") for p in container.get("ports", [])}
    check.expect({GRPC_PORT, METRICS_PORT} <= ports, "container ports 50051, 9464")

    spec = service.get("spec", {})
    check.expect(spec.get("clusterIP") == "None", "Service: headless (clusterIP: None)")
    check.expect(any(p.get("port") == GRPC_PORT for p in spec.get("ports", [])),
                 "Service: port 50051")
    selector = spec.get("selector", {})
    check.expect(selector and selector.items() <= labels.items(), "Service selects the pods")

    budget_selector = budget.get("spec", {}).get("selector", {}).get("matchLabels", {})
    check.expect(budget_selector and budget_selector.items() <= labels.items(),
                 "PodDisruptionBudget selects the pods")
    check.expect(("minAvailable" in budget.get("spec", {})) != ("maxUnavailable" in budget.get("spec", {})),
                 "PodDisruptionBudget: one of minAvailable / maxUnavailable")
    match = deployment.get("spec", {}).get("selector", {}).get("matchLabels", {})
    check.expect(match and match.items() <= labels.items(), "Deployment selector matches its pods")


def check_compose(compose, check):
    services = compose.get("services", {})
    gpu = [s for s in services.values()
           if any(d.get("driver") == "nvidia"
                  for d in s.get("deploy", {}).get("resources", {}).get("reservations", {})
                  .get("devices", []))]
    check.expect(len(gpu) >= 1, "compose: a service reserving an nvidia device")
    cpu = [s for s in services.values() if "cpu" in s.get("profiles", [])]
    check.expect(len(cpu) == 1, "compose: one service in the cpu profile")
    for service in cpu:
        check.expect(service.get("build", {}).get("args", {}).get("VARIANT") == "cpu",
                     "compose cpu service: build arg VARIANT=cpu")
        check.expect(not service.get("deploy", {}).get("resources", {}).get("reservations"),
                     "compose cpu service: no device reservation")
    for name, service in services.items():
        check.expect(service.get("network_mode") == "host", f"compose {name}: network_mode host")
        check.expect(service.get("read_only") is True, f"compose {name}: read_only")
        check.expect(service.get("cap_drop") == ["ALL"], f"compose {name}: cap_drop ALL")


def main():
    check = Checker()
    if sys.argv[1] == "k8s":
        with open(sys.argv[3]) as f:
            check_k8s(sys.argv[2], [d for d in yaml.safe_load_all(f) if d], check)
    elif sys.argv[1] == "compose":
        with open(sys.argv[2]) as f:
            check_compose(yaml.safe_load(f), check)
    else:
        sys.exit(f"unknown manifest kind {sys.argv[1]!r}")
    for failure in check.failures:
        print(f"manifest check failed: {failure}", file=sys.stderr)
    sys.exit(1 if check.failures else 0)


if __name__ == "__main__":
    main()
