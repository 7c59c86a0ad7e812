"""`workload-webhook check`: is a release admitting? (the chart's `helm test`,
cert-manager's startup API check in spirit). Waits, bounded, until both webhook
configurations are registered with a caBundle, then does what the API server
does with them: sends an AdmissionReview to every ready endpoint of the Service
they name (or to their URL), trusting only that caBundle and checking the
certificate for the name the API server dials, and reads the answers itself:

- /validate: a PodGroup with `gang.minCount: 0`, which breaks a mirror of
  kube-apiserver's validation (POL-2). A mirror rule is always denied, so the
  answer is the same in every rollout phase (`enforcement` warn or audit, DIS-2
  off, any namespace excluded);
- /mutate: a Pod that names no group: allowed, with no patch.

It needs no write access anywhere and no namespace the webhook intercepts. What
it cannot see is the API server's own network path to the Service (a
NetworkPolicy that blocks it): a dry run shows that (SECURITY.md).
Exit 0 healthy, 1 not (one line why), 2 usage."""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import socket
import ssl
import sys
import time
import uuid
from urllib.parse import urlsplit

EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE = 0, 1, 2

PROBE_NAME = "workload-webhook-check"
PROBE_FIELD = "spec.schedulingPolicy.gang.minCount"
TIMEOUT = (5, 10)


def probe_review(namespace: str) -> dict:
    """A PodGroup every release denies: gang.minCount 0 (POL-2, a mirror rule, never relaxed)."""
    obj = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
           "metadata": {"name": PROBE_NAME, "namespace": namespace},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}}
    return _review(obj, "scheduling.k8s.io", "v1beta1", "podgroups", namespace)


def pod_review(namespace: str) -> dict:
    """A Pod that names no group: /mutate allows it unchanged."""
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": PROBE_NAME, "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "check"}]}}
    return _review(obj, "", "v1", "pods", namespace)


def _review(obj: dict, group: str, version: str, resource: str, namespace: str) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": resource}, "operation": "CREATE",
        "namespace": namespace, "name": PROBE_NAME, "object": obj, "dryRun": True,
        "userInfo": {"username": "workload-webhook-check"}}}


def judge_answer(review: dict, status: int, body: bytes, expect_denial: bool) -> str | None:
    """None when the answer is this service's, as expected; else what is wrong (pure, unit-tested)."""
    if status != 200:
        return f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
    try:
        response = json.loads(body)["response"]
    except (ValueError, KeyError, TypeError):
        return f"not an AdmissionReview answer: {body[:200].decode('utf-8', 'replace')}"
    if response.get("uid") != review["request"]["uid"]:
        return "the answer's uid is not the request's"
    if not expect_denial:
        if response.get("allowed") is not True or response.get("patch"):
            return f"a Pod that names no group was not allowed unchanged: {json.dumps(response)[:200]}"
        return None
    causes = ((response.get("status") or {}).get("details") or {}).get("causes") or []
    if response.get("allowed") is not False or not any(c.get("field") == PROBE_FIELD for c in causes):
        return f"a PodGroup with gang.minCount 0 was not denied at {PROBE_FIELD}: {json.dumps(response)[:300]}"
    return None


def _configurations(api, name: str) -> tuple[list[dict], str | None]:
    """The two registered configurations, or what is missing."""
    from kubernetes.client.rest import ApiException

    from webhook.cluster.api import Api, path
    from webhook.cluster.webhook_configurations import KINDS, PLURALS
    layer = Api.of(api)
    out = []
    for kind in KINDS:
        try:
            conf = layer.expect("GET", path("admissionregistration.k8s.io", "v1", PLURALS[kind], name=name),
                                timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise                      # the cluster refused us: a cluster error, not an unhealthy release
            return [], f"{kind} {name}: not registered"
        if not conf.get("webhooks") or not all((h.get("clientConfig") or {}).get("caBundle") for h in conf["webhooks"]):
            return [], f"{kind} {name}: no caBundle yet"
        out.append(conf)
    return out, None


def _hook_for(conf: dict, resource: str) -> dict | None:
    return next((h for h in conf["webhooks"] if any(resource in (r.get("resources") or []) for r in h.get("rules") or [])),
                None)


def _endpoints(api, client_config: dict) -> tuple[list[tuple[str, int]], str, str]:
    """Where the API server would send the review: (address, port) pairs, the TLS name, the path."""
    if client_config.get("url"):
        url = urlsplit(client_config["url"])
        return [(url.hostname, url.port or 443)], url.hostname, url.path or "/"
    from webhook.cluster.api import Api, path
    from webhook.cluster.webhook_configurations import ready_endpoints
    layer = Api.of(api)
    svc = client_config["service"]
    name, namespace, port = svc["name"], svc["namespace"], svc.get("port") or 443
    service = layer.expect("GET", path("", "v1", "services", namespace, name), timeout=TIMEOUT)
    port_name = next((p.get("name") for p in (service.get("spec") or {}).get("ports") or [] if p.get("port") == port),
                     None)
    found = []
    for page in layer.pages(path("discovery.k8s.io", "v1", "endpointslices", namespace),
                            {"labelSelector": f"kubernetes.io/service-name={name}"}, timeout=TIMEOUT):
        found += [(address, port) for address, port in ready_endpoints(page.get("items") or [], port_name) if port]
    return sorted(set(found)), f"{name}.{namespace}.svc", svc.get("path") or "/"


def _post(address: str, port: int, tls_name: str, path: str, ca_pem: str, review: dict) -> tuple[int, bytes]:
    """One review over TLS, trusting only the configuration's caBundle, as the API server does."""
    ctx = ssl.create_default_context(cadata=ca_pem)
    raw = socket.create_connection((address, port), timeout=TIMEOUT[1])
    conn = http.client.HTTPConnection(tls_name, port, timeout=TIMEOUT[1])
    try:
        conn.sock = ctx.wrap_socket(raw, server_hostname=tls_name)
        conn.request("POST", path, json.dumps(review), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read(1 << 20)
    finally:
        conn.close()
        raw.close()


def _ask(api, conf: dict, resource: str, review: dict, expect_denial: bool) -> tuple[int, str | None]:
    """How many endpoints answered as expected, or the first problem."""
    hook = _hook_for(conf, resource)
    if hook is None:
        return 0, f"{conf['kind']} {conf['metadata']['name']}: no webhook for {resource}"
    cc = hook["clientConfig"]
    endpoints, tls_name, path = _endpoints(api, cc)
    if not endpoints:
        return 0, f"Service {cc['service']['namespace']}/{cc['service']['name']} has no ready endpoint"
    ca_pem = base64.b64decode(cc["caBundle"]).decode("ascii", "replace")
    for address, port in endpoints:
        try:
            status, body = _post(address, port, tls_name, path, ca_pem, review)
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            return 0, f"{tls_name} at {address}:{port}{path}: {(str(exc).splitlines() or [type(exc).__name__])[0][:200]}"
        problem = judge_answer(review, status, body, expect_denial)
        if problem:
            return 0, f"{tls_name} at {address}:{port}{path}: {problem}"
    return len(endpoints), None


def check_once(api, name: str, namespace: str) -> tuple[str | None, int]:
    """(None, endpoints checked) when healthy, else (what is wrong, 0)."""
    confs, problem = _configurations(api, name)
    if problem:
        return problem, 0
    validating, mutating = confs
    count, problem = _ask(api, validating, "podgroups", probe_review(namespace), expect_denial=True)
    if problem is None:
        _, problem = _ask(api, mutating, "pods", pod_review(namespace), expect_denial=False)
    return problem, count


def add_parser(subparsers) -> argparse.ArgumentParser:
    ck = subparsers.add_parser("check", help="is a release admitting? (registered, and every endpoint denies a POL-2 "
                                             "probe sent as the API server sends it); the chart's helm test")
    ck.add_argument("--name", default="workload-webhook", help="the webhook configurations' name")
    ck.add_argument("--namespace", default="default", help="the namespace the probe objects name (nothing is created)")
    ck.add_argument("--kubeconfig", metavar="FILE",
                    help="default: $KUBECONFIG, else ~/.kube/config, else in-cluster (as kubectl)")
    ck.add_argument("--timeout", type=float, default=60, metavar="SECONDS", help="how long to wait; default 60")
    ck.set_defaults(func=run)
    return ck


def run(args: argparse.Namespace) -> int:
    from webhook.cluster import credentials, failure
    try:
        api = credentials.api_client("auto", args.kubeconfig)
    except credentials.CredentialsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if api is None:
        print(f"error: {credentials.no_cluster_message()}", file=sys.stderr)
        return EXIT_USAGE
    deadline = time.monotonic() + args.timeout
    problem, cluster_error = "not checked", False
    while time.monotonic() < deadline:
        try:
            problem, count = check_once(api, args.name, args.namespace)
            cluster_error = False
        except failure.errors() as exc:     # the API server: unreachable, or refusing these credentials
            problem, cluster_error = failure.line(failure.server_of(api), exc), True
            if getattr(exc, "status", None) in (401, 403):
                break                       # asking again will not change the answer
        if problem is None:
            print(f"ok: {args.name} is registered; {count} endpoint(s) answer with a certificate its caBundle "
                  f"verifies and deny a PodGroup with gang.minCount 0 (POL-2), whatever the enforcement settings")
            return EXIT_OK
        time.sleep(1)
    if cluster_error:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    print(f"unhealthy after {args.timeout:.0f} s: {problem}", file=sys.stderr)
    return EXIT_UNHEALTHY
