"""A release of the chart on the real node (tests/e2e/node.py), for the tests of the
chart's life there (test_chart_node_install.py, test_chart_node_rollout.py): the
release's values, Pods and webhook configurations, helm install and uninstall with
the waits that follow, what a Pod serves at its IP, and the trickle of admission
calls from inside the node's network namespace."""
from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import time

import pytest
import yaml
from cryptography import x509

from tests.e2e import summary
from tests.e2e.netns import in_netns
from tests.e2e.node_files import NETNS
from tests.e2e.test_chart import CHART, TRAINJOB_TARGET, AdmissionLoop
from tests.e2e.test_chart_node import HOOK_KINDS, bad_trainjob, wait_for
from tests.server.harness import REPO
from webhook.cluster.registrar import ANNOTATION_REVISION

NS = "ww-rollout"
TENANT = "ww-tenant"
PORT = 8443


def fullname(release: str) -> str:
    return f"{release}-workload-webhook"


class NodeLoop(AdmissionLoop):
    """test_chart.py's loop of dry-run TrainJob creations (a bad one refused with 422, a good one
    admitted with 201, alternately), sent from inside the node's network namespace."""

    def __init__(self, node, namespace=TENANT, max_seconds=120):
        super().__init__(node.cp, namespace, max_seconds)

    def _run(self):
        in_netns(NETNS, super()._run)

    def report(self, what: str) -> str:
        line = f"{what}: {len(self.results)} admissions sent, {len(self.failures())} failed"
        summary.add(f"real node chart: {line}")
        return line


def chart_values(images, tmp_path, **extra) -> str:
    repository, tag = images["WEBHOOK_IMAGE"].rsplit(":", 1)
    values = {"image": {"repository": repository.removeprefix("docker.io/library/"), "tag": tag, "pullPolicy": "Never"},
              "replicaCount": 2, "config": {"targets": [TRAINJOB_TARGET]}}
    for key, value in extra.items():
        values[key] = {**values[key], **value} if isinstance(value, dict) and key in values else value
    path = tmp_path / f"values-{len(os.listdir(tmp_path))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return str(path)


def pods(node, release: str) -> list[dict]:
    return json.loads(node.kubectl("get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={release}",
                                   "-o", "json").stdout)["items"]


def is_ready(p: dict) -> bool:
    return not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])


def ready_pods(node, release: str) -> dict[str, str]:
    """name -> Pod IP of the release's Ready, not terminating Pods."""
    return {p["metadata"]["name"]: p["status"]["podIP"] for p in pods(node, release) if is_ready(p)}


def hooks(node, release: str) -> dict[str, dict | None]:
    out = {}
    for kind in HOOK_KINDS:
        text = node.kubectl("get", kind, fullname(release), "-o", "json", "--ignore-not-found").stdout
        out[kind] = json.loads(text) if text.strip() else None
    return out


def revisions(node, release: str) -> dict[str, str | None]:
    return {k: (h or {}).get("metadata", {}).get("annotations", {}).get(ANNOTATION_REVISION)
            for k, h in hooks(node, release).items()}


def all_hook_names(node) -> set[str]:
    out = node.kubectl("get", ",".join(HOOK_KINDS), "-o", "name").stdout
    return set(out.split())


def served_leaf(ip: str) -> x509.Certificate | None:
    """The certificate a Pod serves, asked directly at its IP (inside the namespace)."""
    def get():
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        with socket.create_connection((ip, PORT), timeout=3) as raw, ctx.wrap_socket(raw) as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
    try:
        return in_netns(NETNS, get)
    except OSError:
        return None


def answers(ip: str) -> bool:
    """The Pod answers /healthz at its IP (it still serves)."""
    def get():
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        conn = http.client.HTTPSConnection(ip, PORT, context=ctx, timeout=3)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        finally:
            conn.close()
    try:
        return in_netns(NETNS, get)
    except (OSError, http.client.HTTPException):
        return False


def crashed_on_config(p: dict) -> bool:
    """The Pod's container exited 2: `serve` refused its config."""
    c = (p["status"].get("containerStatuses") or [{}])[0]
    return (c.get("lastState", {}).get("terminated") or c.get("state", {}).get("terminated") or {}).get("exitCode") == 2


def refused_with_dis2(node, obj: dict) -> bool:
    proc = node.kubectl("create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(obj), check=False)
    return proc.returncode != 0 and "(DIS-2)" in proc.stderr


def install(node, release: str, values: str, timeout: str = "150s") -> float:
    t0 = time.monotonic()
    proc = node.helm("install", release, CHART, "-n", NS, "--create-namespace", "-f", values, "--wait",
                     "--timeout", timeout, check=False, timeout=300)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        pytest.fail(f"helm install {release} --wait failed after {took:.1f} s:\n{proc.stderr[-3000:]}\n"
                    f"{node.diagnose(NS)}", pytrace=False)
    return took


def wait_registered(node, release: str, t0: float) -> float:
    for kind in HOOK_KINDS:
        wait_for(f"{kind} {fullname(release)} registered with a caBundle", lambda: all(
            (w.get("clientConfig") or {}).get("caBundle")
            for w in ((hooks(node, release)[kind] or {}).get("webhooks") or [{}])), node, namespace=NS)
    wait_for("the API server calling the webhook through the Service",
             lambda: refused_with_dis2(node, bad_trainjob("probe")), node, interval=1, namespace=NS)
    return time.monotonic() - t0


def uninstall(node, release: str) -> None:
    node.helm("uninstall", release, "-n", NS, "--wait", "--timeout", "90s", check=False, timeout=150)
    wait_for(f"the webhook configurations of {release} gone after uninstall",
             lambda: not any(hooks(node, release).values()), node, timeout=90, namespace=NS)


def evaljob_crd() -> str:
    text = open(os.path.join(REPO, "examples", "crds", "trainjob.yaml")).read()
    for a, b in (("trainjobs", "evaljobs"), ("TrainJobList", "EvalJobList"), ("TrainJob", "EvalJob"),
                 ("trainjob", "evaljob")):
        text = text.replace(a, b)
    return text


def prepared(real_node):
    """The node with the TrainJob and EvalJob CRDs and the release and tenant namespaces."""
    for text in (open(os.path.join(REPO, "examples", "crds", "trainjob.yaml")).read(), evaljob_crd()):
        real_node.kubectl("apply", "-f", "-", input=text)
    for crd in ("trainjobs", "evaljobs"):
        real_node.kubectl("wait", "--for=condition=Established", f"crd/{crd}.training.example.com", "--timeout=60s")
    for ns in (NS, TENANT):
        real_node.kubectl("create", "namespace", ns, check=False)
    return real_node
