"""The chart's life on the real node after install (issue 19, points 4 and 5), one release in
mode `self` with short validities, under a steady trickle of admission calls (test_chart.py's
AdmissionLoop, run inside the node's network namespace):

- the CA and serving certificates rotate, zero failed admissions;
- `helm upgrade` adding a target rolls the Pods, zero failed admissions, the new target enforced;
- one of the two replicas evicted (the PDB refuses the second) or deleted: zero failed admissions,
  the terminating Pod keeps serving through its preStop while it is already out of the endpoints;
- `helm upgrade --wait` to a broken config fails; the old Pods keep serving, the registered
  configurations keep the old revision, zero failed admissions; `helm rollback` restores the
  config and keeps the old Pods;
- `helm rollback` after a successful upgrade registers the rules of the revision rolled back to.

Installing (certificate mode `provided`, releases that cannot become Ready) is in
test_chart_node_install.py. Figures (admissions sent, failures, durations) go to the terminal
summary."""
from __future__ import annotations

import base64
import json
import time

import pytest
import yaml
from cryptography import x509

from tests.e2e import summary
from tests.e2e.chart_node_release import (NS, NodeLoop, answers, chart_values, crashed_on_config, fullname, hooks,
                                          install, is_ready, pods, prepared, ready_pods, refused_with_dis2,
                                          revisions, served_leaf, uninstall, wait_registered)
from tests.e2e.test_chart import CHART, EVALJOB_TARGET, TRAINJOB_TARGET
from tests.e2e.test_chart_node import HOOK_KINDS, bad_trainjob, wait_for
from tests.e2e.test_chart_node_install import BROKEN_TARGET

SHORT = {"caValiditySeconds": 45, "leafValiditySeconds": 24, "graceSeconds": 5, "checkIntervalSeconds": 1}


@pytest.fixture(scope="module")
def node(real_node):
    return prepared(real_node)


RELEASE = "wwr"


@pytest.fixture(scope="module")
def rollout(node, images, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rollout")
    values = chart_values(images, tmp, certificates={"mode": "self", "self": SHORT})
    t0 = time.monotonic()
    node.timings["self (short validities): helm install --wait"] = install(node, RELEASE, values)
    node.timings["self (short validities): webhook called"] = wait_registered(node, RELEASE, t0)
    yield node, tmp
    uninstall(node, RELEASE)


def tls_secret(node) -> dict[str, bytes]:
    data = json.loads(node.kubectl("get", "secret", f"{fullname(RELEASE)}-tls", "-n", NS, "-o", "json").stdout)["data"]
    return {k: base64.b64decode(v) for k, v in data.items()}


def _issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        leaf.verify_directly_issued_by(ca)
        return True
    except Exception:
        return False


def test_certificate_rotation_with_zero_failed_admissions(rollout):
    """A whole CA rotation: a new CA joins the bundle, both Pods serve certificates it signed,
    the old CA leaves the bundle, both configurations carry the new bundle."""
    node, _ = rollout
    first_ca = tls_secret(node)["ca-signing.crt"]
    leaves: dict[str, set[int]] = {}
    done = None
    t0 = time.monotonic()
    with NodeLoop(node, max_seconds=90) as loop:
        while time.monotonic() - t0 < 80:
            served = {name: served_leaf(ip) for name, ip in ready_pods(node, RELEASE).items()}
            for name, cert in served.items():
                if cert is not None:
                    leaves.setdefault(name, set()).add(cert.serial_number)
            s = tls_secret(node)
            signing = x509.load_pem_x509_certificate(s["ca-signing.crt"])
            bundle = x509.load_pem_x509_certificates(s["ca.crt"])
            published = {w["clientConfig"]["caBundle"] for h in hooks(node, RELEASE).values() for w in h["webhooks"]}
            if s["ca-signing.crt"] != first_ca and len(bundle) == 1 and \
                    published == {base64.b64encode(s["ca.crt"]).decode()} and len(served) == 2 and \
                    all(c is not None and _issued_by(c, signing) for c in served.values()) and \
                    len(leaves) == 2 and all(len(v) >= 2 for v in leaves.values()):
                done = time.monotonic() - t0
                break
            time.sleep(1)
        time.sleep(3)
    assert done is not None, f"no complete rotation within 80 s: leaves {leaves}, CA rotated: " \
                             f"{tls_secret(node)['ca-signing.crt'] != first_ca}"
    node.timings["self: CA and serving certificates rotated"] = done
    line = loop.report(f"certificate rotation (CA rotated, {sum(map(len, leaves.values()))} serving certificates "
                       f"seen on 2 Pods, {done:.0f} s)")
    assert len(loop.results) > 100, line
    assert loop.failures() == [], loop.failures()[:3]


def _old_pods_gone(node, old: set[str]) -> bool:
    return not old & {p["metadata"]["name"] for p in pods(node, RELEASE)}


def test_helm_upgrade_adding_a_target_rolls_the_pods_with_zero_failed_admissions(rollout, images):
    node, tmp = rollout
    old = set(ready_pods(node, RELEASE))
    bad_eval = {**bad_trainjob("bad-eval"), "kind": "EvalJob"}
    assert not refused_with_dis2(node, bad_eval), "EvalJob must not be judged before it is a target"
    values = chart_values(images, tmp, certificates={"mode": "self", "self": SHORT},
                          config={"targets": [TRAINJOB_TARGET, EVALJOB_TARGET]})
    with NodeLoop(node, max_seconds=240) as loop:
        time.sleep(2)
        t0 = time.monotonic()
        proc = node.helm("upgrade", RELEASE, CHART, "-n", NS, "-f", values, "--wait", "--timeout", "180s",
                         check=False, timeout=240)
        took = time.monotonic() - t0
        assert proc.returncode == 0, f"{proc.stderr[-3000:]}\n{node.diagnose(NS)}"
        wait_for("the old Pods gone", lambda: _old_pods_gone(node, old), node, timeout=90, namespace=NS)
        rolled = time.monotonic() - t0
        time.sleep(3)
    node.timings["upgrade: helm upgrade --wait"] = took
    node.timings["upgrade: old Pods gone"] = rolled
    new = set(ready_pods(node, RELEASE))
    assert len(new) == 2 and not new & old, (old, new)
    line = loop.report(f"helm upgrade adding EvalJob (Pods rolled in {rolled:.0f} s)")
    assert len(loop.results) > 100, line
    assert loop.failures() == [], loop.failures()[:3]
    assert revisions(node, RELEASE) == {k: "2" for k in HOOK_KINDS}
    rules = [r for w in hooks(node, RELEASE)[HOOK_KINDS[0]]["webhooks"] for r in w["rules"]]
    assert any("evaljobs" in r["resources"] for r in rules), rules
    wait_for("EvalJob judged after the upgrade", lambda: refused_with_dis2(node, bad_eval), node, timeout=30,
             namespace=NS)


def _evict(node, name: str) -> int:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    return node.api("POST", f"/api/v1/namespaces/{NS}/pods/{name}/eviction", body)[0]


def _endpoint_ready(node, ip: str) -> bool | None:
    slices = json.loads(node.kubectl("get", "endpointslices", "-n", NS, "-l",
                                     f"kubernetes.io/service-name={fullname(RELEASE)}", "-o", "json").stdout)["items"]
    for s in slices:
        for ep in s.get("endpoints") or []:
            if ip in ep.get("addresses", []):
                return (ep.get("conditions") or {}).get("ready")
    return None


def _remove_one(node, how: str) -> dict:
    """Evict or delete one Ready replica; follow it until it is gone and two are Ready again."""
    before = ready_pods(node, RELEASE)
    assert len(before) == 2, before
    victim, ip = sorted(before.items())[0]
    t0 = time.monotonic()
    if how == "evict":
        assert _evict(node, victim) == 201
        other = next(n for n in before if n != victim)
        # The PodDisruptionBudget (minAvailable 1) refuses a second eviction while the first is replaced.
        assert _evict(node, other) == 429
    else:
        node.kubectl("delete", "pod", victim, "-n", NS, "--wait=false")
    out_of_endpoints = serving_until = None
    while time.monotonic() - t0 < 90:
        now = time.monotonic() - t0
        if out_of_endpoints is None and not _endpoint_ready(node, ip):
            out_of_endpoints = now
        if answers(ip):
            serving_until = now
        if victim not in {p["metadata"]["name"] for p in pods(node, RELEASE)} and len(ready_pods(node, RELEASE)) == 2:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"{victim} not replaced within 90 s\n{node.diagnose(NS)}", pytrace=False)
    return {"replaced": time.monotonic() - t0, "out_of_endpoints": out_of_endpoints, "serving_until": serving_until}


def _disruptions_allowed(node) -> int | None:
    pdb = json.loads(node.kubectl("get", "pdb", fullname(RELEASE), "-n", NS, "-o", "json").stdout)
    return (pdb.get("status") or {}).get("disruptionsAllowed")


def test_evicting_or_deleting_a_replica_gives_zero_failed_admissions(rollout):
    node, _ = rollout
    wait_for("the PodDisruptionBudget allowing one disruption", lambda: _disruptions_allowed(node) == 1, node,
             timeout=30, namespace=NS)
    with NodeLoop(node, max_seconds=200) as loop:
        time.sleep(2)
        evicted = _remove_one(node, "evict")
        wait_for("the PodDisruptionBudget allowing one disruption again", lambda: _disruptions_allowed(node) == 1,
                 node, timeout=30, namespace=NS)
        deleted = _remove_one(node, "delete")
        time.sleep(3)
    for what, f in (("evicted", evicted), ("deleted", deleted)):
        # preStop: still serving well after it left the Service's ready endpoints.
        assert f["out_of_endpoints"] is not None and f["out_of_endpoints"] < 3, f
        assert f["serving_until"] is not None and f["serving_until"] >= f["out_of_endpoints"] + 5, f
        node.timings[f"replica {what}: replaced"] = f["replaced"]
        summary.add(f"real node chart: replica {what}: out of the ready endpoints after {f['out_of_endpoints']:.1f} s, "
                    f"still serving at {f['serving_until']:.1f} s (preStop), replaced after {f['replaced']:.1f} s")
    line = loop.report("one replica evicted (a second eviction refused by the PDB), then one deleted")
    assert len(loop.results) > 100, line
    assert loop.failures() == [], loop.failures()[:3]


def test_helm_upgrade_to_a_broken_config_fails_and_leaves_admission_as_it_was(rollout, images):
    node, tmp = rollout
    old = ready_pods(node, RELEASE)
    registered = hooks(node, RELEASE)
    rev = revisions(node, RELEASE)
    good_config = yaml.safe_load(node.kubectl("get", "configmap", fullname(RELEASE), "-n", NS, "-o",
                                              "jsonpath={.data.config\\.yaml}").stdout)
    values = chart_values(images, tmp, certificates={"mode": "self", "self": SHORT},
                          config={"targets": [TRAINJOB_TARGET, EVALJOB_TARGET, BROKEN_TARGET]})
    with NodeLoop(node, max_seconds=180) as loop:
        time.sleep(2)
        t0 = time.monotonic()
        proc = node.helm("upgrade", RELEASE, CHART, "-n", NS, "-f", values, "--wait", "--timeout", "40s",
                         check=False, timeout=120)
        took = time.monotonic() - t0
        time.sleep(5)
        assert proc.returncode != 0, "helm upgrade --wait succeeded with a config serve refuses"
        assert "context deadline exceeded" in proc.stderr or "timed out" in proc.stderr, proc.stderr
        assert ready_pods(node, RELEASE) == old, "the old Pods must keep serving"
        stuck = [p for p in pods(node, RELEASE) if p["metadata"]["name"] not in old]
        assert stuck and all(crashed_on_config(p) and not is_ready(p) for p in stuck), [p["status"] for p in stuck]
        assert revisions(node, RELEASE) == rev
        now = hooks(node, RELEASE)
        assert all([w["rules"] for w in now[k]["webhooks"]] == [w["rules"] for w in registered[k]["webhooks"]]
                   for k in HOOK_KINDS)
        # The way back: a rollback restores the release's config (an old Pod that restarted before it
        # would read the new ConfigMap); the old ReplicaSet is the rollback's, so its Pods stay.
        t1 = time.monotonic()
        node.helm("rollback", RELEASE, "-n", NS, "--wait", "--timeout", "60s", timeout=120)
        rolled_back = time.monotonic() - t1
        wait_for("the broken Pod gone after the rollback", lambda: set(
            p["metadata"]["name"] for p in pods(node, RELEASE)) == set(old), node, timeout=60, namespace=NS)
        time.sleep(3)
    node.timings["broken upgrade: helm upgrade --wait fails"] = took
    node.timings["broken upgrade: helm rollback --wait"] = rolled_back
    assert ready_pods(node, RELEASE) == old and revisions(node, RELEASE) == rev
    restored = yaml.safe_load(node.kubectl("get", "configmap", fullname(RELEASE), "-n", NS, "-o",
                                           "jsonpath={.data.config\\.yaml}").stdout)
    assert restored == good_config
    line = loop.report(f"helm upgrade --wait to a broken config (failed after {took:.0f} s; old Pods kept serving, "
                       f"registration kept revision {rev[HOOK_KINDS[0]]}), then helm rollback ({rolled_back:.0f} s)")
    assert len(loop.results) > 100, line
    assert loop.failures() == [], loop.failures()[:3]
    assert refused_with_dis2(node, {**bad_trainjob("still-eval"), "kind": "EvalJob"})


def test_helm_rollback_after_a_successful_upgrade_registers_the_rules_rolled_back_to(rollout, images):
    """helm rollback re-applies revision 1's manifest, its `revision: "1"` included, after revision 2
    registered EvalJob: the Deployment makes revision 1's ReplicaSet its newest rollout, and the
    registration follows that order, so EvalJob is no longer judged (the release revision alone kept
    revision 2's rules registered for ever)."""
    node, _ = rollout
    bad_eval = {**bad_trainjob("rolled-back-eval"), "kind": "EvalJob"}
    assert refused_with_dis2(node, bad_eval), "the tests before this one leave EvalJob a target"
    old = set(ready_pods(node, RELEASE))
    with NodeLoop(node, max_seconds=180) as loop:
        time.sleep(2)
        t0 = time.monotonic()
        node.helm("rollback", RELEASE, "1", "-n", NS, "--wait", "--timeout", "120s", timeout=180)
        wait_for("the Pods of the rollback", lambda: _old_pods_gone(node, old), node, timeout=90, namespace=NS)
        wait_for("revision 1's rules registered", lambda: not any(
            "evaljobs" in r["resources"] for w in hooks(node, RELEASE)[HOOK_KINDS[0]]["webhooks"] for r in w["rules"]),
            node, timeout=60, namespace=NS)
        took = time.monotonic() - t0
        time.sleep(3)
    node.timings["successful upgrade, then helm rollback: revision 1's rules registered"] = took
    assert revisions(node, RELEASE) == {k: "1" for k in HOOK_KINDS}
    rollouts = {k: h["metadata"]["annotations"].get("workload-webhook.k8s.io/rollout-revision")
                for k, h in hooks(node, RELEASE).items()}
    assert all(r and int(r) >= 3 for r in rollouts.values()), rollouts     # revision 1's ReplicaSet, now the newest
    assert not refused_with_dis2(node, bad_eval)
    assert refused_with_dis2(node, bad_trainjob("rolled-back-train"))
    line = loop.report(f"helm rollback to revision 1 after a successful upgrade ({took:.0f} s to its rules)")
    assert len(loop.results) > 50, line
    assert loop.failures() == [], loop.failures()[:3]
