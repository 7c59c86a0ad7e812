"""The webhook's mirror rules agree with kube-apiserver's own validation, case
by case, on creates and updates: the shared table is the upstream cases
(tests/unit/data/upstream_cases.yaml), chosen by their data alone; the
webhook's side is the answer a served `workload-webhook serve` gives over
HTTPS (the mirror configuration: every gate on, this service's own policies
off), the API server's side a dry-run create (POST) or update (PUT of the new
object over the stored old one). Same verdict; when denied, the same error
types at the same paths. The table's counts are printed."""
from __future__ import annotations

import copy
import os
from collections import Counter

import pytest
import yaml

from tests.e2e import summary
from tests.e2e.rest import Api
from tests.server.harness import Server, admission_request
from tests.unit import test_upstream_cases as upstream

PLURALS = {"Workload": "workloads", "PodGroup": "podgroups", "CompositePodGroup": "compositepodgroups"}
NS = "workload-webhook"      # never intercepted by the session's own webhook registration
MIRROR = {"featureGates": {g: True for g in upstream.ALL_GATES},
          "policies": {"forbidAllWithBasic": False, "checkPodGroupAgainstWorkload": False}}


# The fields each gate controls: a case that turns a gate off is judged with it
# on unless its objects use one of them.
GATED = {"DRAWorkloadResourceClaims": {"resourceClaims"},
         "TopologyAwareWorkloadScheduling": {"schedulingConstraints"},
         "CompositePodGroup": {"compositePodGroupTemplates", "parentCompositePodGroupName"},
         "PodGroupPreemptionPolicy": {"preemptionPolicy"},
         "GenericWorkload": {"spec"}}


def _keys(node) -> set:
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            out.update(n)
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return out


def exclusion(case: dict) -> str | None:
    """Why a case cannot be judged the same way by a 1.37 server with every
    gate on, from the case's data alone (None: it can)."""
    if case["kind"] not in PLURALS:
        return "a building block, not an API object"
    if case.get("subresource"):
        return "status subresource: a PUT of /status judges other fields"
    off = {g for g, on in (case.get("featureGates") or {}).items() if on is False}
    if any(GATED[g] & _keys(case.get(k)) for g in off & set(GATED) for k in ("object", "oldObject")):
        return "uses a field whose feature gate the case turns off; the test server has every gate on"
    for key in ("object", "oldObject"):
        spec = (case.get(key) or {}).get("spec") or {}
        if case["kind"] != "Workload" and any(k in spec for k in ("priority", "priorityClassName", "preemptionPolicy")):
            return "priority fields: the Priority admission plugin answers before validation"
    if case["operation"] == "UPDATE" and not isinstance(case.get("oldObject"), dict):
        return "an update without an old object"
    return None


def versions(case: dict) -> list[dict]:
    """Workload and PodGroup are served as v1beta1 and v1alpha3: each case in both."""
    if case["kind"] == "CompositePodGroup":
        return [case]
    out = []
    for version in ("v1beta1", "v1alpha3"):
        c = copy.deepcopy(case)
        for key in ("object", "oldObject"):
            if isinstance(c.get(key), dict):
                c[key]["apiVersion"] = f"scheduling.k8s.io/{version}"
        c["id"] = f"{version} {case['id']}"
        out.append(c)
    return out


SELECTED = [v for c in upstream.CASES if exclusion(c) is None for v in versions(c)]
EXCLUDED = Counter(exclusion(c) for c in upstream.CASES if exclusion(c) is not None)
TALLY: Counter = Counter()


def _errors(causes: list[dict]) -> set:
    return {(c["reason"].removeprefix("FieldValue"), c.get("field", "")) for c in causes}


class ApiServer(Api):
    def verdict(self, status: int, body: dict) -> tuple[bool, set]:
        if status in (200, 201):
            return True, set()
        assert status == 422, body
        errors = _errors(body.get("details", {}).get("causes", []))
        # kube-apiserver defaults disruptionMode before validation; the webhook accepts its absence (PG-1).
        errors.discard(("Required", "spec.disruptionMode"))
        return not errors, errors


@pytest.fixture(scope="module")
def mirror(cluster, kubectl, tmp_path_factory):
    """A second `workload-webhook serve` with the mirror configuration (not
    registered: the test sends it the reviews kube-apiserver would)."""
    kubectl("create", "namespace", NS, check=False)
    work = tmp_path_factory.mktemp("mirror")
    config = os.path.join(work, "mirror.yaml")
    with open(config, "w") as f:
        yaml.safe_dump(MIRROR, f)
    server = Server(str(work), config=config, extra=["--cluster", "disabled"]).start()
    yield server
    server.stop()
    compared = sum(TALLY.values())
    summary.add(f"agreement with kube-apiserver: {compared} cases compared "
          f"({TALLY['CREATE allowed']} creates allowed, {TALLY['CREATE denied']} creates denied, "
          f"{TALLY['UPDATE allowed']} updates allowed, {TALLY['UPDATE denied']} updates denied); "
          f"excluded by their data: " + "; ".join(f"{n} ({why})" for why, n in EXCLUDED.items()))


def as_admitted(obj: dict, stored: dict) -> dict:
    """The object as kube-apiserver hands it to validating webhooks on UPDATE:
    its Priority admission plugin has already filled `spec.preemptionPolicy`
    of a PodGroup or CompositePodGroup from the priority class, as it did for
    the stored object at create (it leaves `spec.priority` alone: a priority
    dropped on update is refused as a change, by both)."""
    if obj["kind"] == "Workload" or not isinstance(obj.get("spec"), dict):
        return obj
    out = copy.deepcopy(obj)
    if "preemptionPolicy" not in out["spec"] and "preemptionPolicy" in (stored.get("spec") or {}):
        out["spec"]["preemptionPolicy"] = stored["spec"]["preemptionPolicy"]
    return out


def served(server: Server, obj: dict, old: dict | None) -> tuple[bool, set]:
    req = admission_request(obj, operation="UPDATE" if old is not None else "CREATE", old=old, namespace=NS)
    status, body = server.review("/validate", req)
    assert status == 200, body
    r = body["response"]
    if r["allowed"]:
        return True, set()
    assert (r["status"]["code"], r["status"]["reason"]) == (422, "Invalid"), r["status"]
    return False, _errors(r["status"]["details"]["causes"])


def test_the_table_is_large_and_has_updates():
    assert len(SELECTED) >= 300
    assert sum(c["operation"] == "UPDATE" for c in SELECTED) >= 100


@pytest.mark.parametrize("index,case", list(enumerate(SELECTED)), ids=[c["id"] for c in SELECTED])
def test_served_answer_agrees_with_kube_apiserver(mirror, cluster, index, case):
    api = ApiServer(cluster)
    plural = PLURALS[case["kind"]]
    obj = copy.deepcopy(case["object"])
    obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": NS, "name": f"case-{index}"}
    base = f"/apis/{obj['apiVersion']}/namespaces/{NS}/{plural}"
    if case["operation"] == "CREATE":
        server = api.verdict(*api.call("POST", f"{base}?dryRun=All", obj))
        ours = served(mirror, obj, None)
    else:
        old = copy.deepcopy(case["oldObject"])
        meta = {k: v for k, v in (old.get("metadata") or {}).items() if k not in ("resourceVersion", "uid")}
        old["metadata"] = {**meta, "namespace": NS, "name": f"case-{index}"}
        status, stored = api.call("POST", base, old)
        assert status == 201, f"the case's old object is not creatable: {stored.get('message')}"
        try:
            obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            server = api.verdict(*api.call("PUT", f"{base}/{obj['metadata']['name']}?dryRun=All", obj))
            ours = served(mirror, as_admitted(obj, stored), stored)
        finally:
            stored["metadata"]["finalizers"] = []
            api.call("PUT", f"{base}/{obj['metadata']['name']}", stored)
            api.call("DELETE", f"{base}/{obj['metadata']['name']}", {})
    assert ours[0] == server[0], f"kube-apiserver: {sorted(server[1])}; webhook: {sorted(ours[1])}"
    if not server[0]:
        assert ours[1] == server[1]
    TALLY[f"{case['operation']} {'allowed' if server[0] else 'denied'}"] += 1
