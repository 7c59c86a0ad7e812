"""`workload-webhook check`: is a release admitting as it should? (the chart's
`helm test`, cert-manager's startup API check in spirit). Waits, bounded, until
both webhook configurations are registered with a caBundle, then asks the API
server for a server-side dry run of a PodGroup that breaks DIS-2 and expects
this service's denial. Exit 0 healthy, 1 not (one line why), 2 usage."""
from __future__ import annotations

import argparse
import sys
import time

EXIT_OK, EXIT_UNHEALTHY, EXIT_USAGE = 0, 1, 2

PROBE_NAME = "workload-webhook-check"


def probe(namespace: str) -> dict:
    """A PodGroup the API server admits and this service denies (DIS-2)."""
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": PROBE_NAME, "namespace": namespace},
            "spec": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}


def _registered(api, name: str) -> str | None:
    """None when both configurations carry a caBundle, else what is missing."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    adm = client.AdmissionregistrationV1Api(api)
    for kind, read in (("ValidatingWebhookConfiguration", adm.read_validating_webhook_configuration),
                       ("MutatingWebhookConfiguration", adm.read_mutating_webhook_configuration)):
        try:
            conf = read(name, _request_timeout=(5, 10))
        except ApiException as exc:
            return f"{kind} {name}: {'not registered' if exc.status == 404 else f'HTTP {exc.status}'}"
        if not all(h.client_config.ca_bundle for h in conf.webhooks or []):
            return f"{kind} {name}: no caBundle yet"
    return None


def _denied(api, namespace: str) -> str | None:
    """None when the dry run is denied with DIS-2, else what happened."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "scheduling.k8s.io", "v1beta1", namespace, "podgroups", probe(namespace), dry_run="All",
            _request_timeout=(5, 15))
    except ApiException as exc:
        text = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or exc.reason)
        return None if "(DIS-2)" in text else f"denied, but not by this service: {text[:300]}"
    return "admitted a PodGroup that breaks DIS-2: the webhook is not called"


def run(args: argparse.Namespace) -> int:
    from webhook.cluster import credentials
    try:
        api = credentials.api_client("auto", args.kubeconfig)
    except credentials.CredentialsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if api is None:
        print(f"error: {credentials.no_cluster_message()}", file=sys.stderr)
        return EXIT_USAGE
    deadline = time.monotonic() + args.timeout
    problem = "not checked"
    while time.monotonic() < deadline:
        try:
            problem = _registered(api, args.name) or _denied(api, args.namespace)
        except Exception as exc:        # an unreachable API server: say so, keep trying until the deadline
            problem = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        if problem is None:
            print(f"ok: {args.name} is registered and denies a PodGroup that breaks DIS-2 in {args.namespace}")
            return EXIT_OK
        time.sleep(1)
    print(f"unhealthy after {args.timeout:.0f} s: {problem}", file=sys.stderr)
    return EXIT_UNHEALTHY
