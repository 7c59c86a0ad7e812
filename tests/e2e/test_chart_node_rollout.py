"""The chart's life on the real node (issue 19, points 4 and 5), under a steady trickle of
admission calls (test_chart.py's AdmissionLoop, run inside the node's network namespace):

- certificate mode `provided`: an existing kubernetes.io/tls Secret signed by a CA made here;
- mode `self` with short validities: the CA and serving certificates rotate, zero failed admissions;
- `helm upgrade` adding a target rolls the Pods, zero failed admissions, the new target enforced;
- one of the two replicas evicted (the PDB refuses the second) or deleted: zero failed admissions,
  the terminating Pod keeps serving through its preStop while it is already out of the endpoints;
- a release whose Pods cannot become Ready (a config serve refuses, an image that is not there)
  fails `helm install --wait` and never registers anything: admission is as before, throughout;
- `helm upgrade --wait` to a broken config fails; the old Pods keep serving, the registered
  configurations keep the old revision, zero failed admissions; `helm rollback` restores the
  config and keeps the old Pods.

Figures (admissions sent, failures, durations) go to the terminal summary."""
from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import threading
import time

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.e2e import summary
from tests.e2e.netns import in_netns
from tests.e2e.node_files import NETNS
from tests.e2e.test_chart import CHART, EVALJOB_TARGET, TRAINJOB_TARGET, AdmissionLoop
from tests.e2e.test_chart_node import HOOK_KINDS, bad_trainjob, wait_for
from tests.server.harness import REPO
from webhook.certificates.files import make_ca, make_serving, pem_key
from webhook.cluster.registrar import ANNOTATION_REVISION

NS = "ww-rollout"
TENANT = "ww-tenant"
PORT = 8443
SHORT = {"caValiditySeconds": 45, "leafValiditySeconds": 24, "graceSeconds": 5, "checkIntervalSeconds": 1}
# Passes values.schema.json (each path is a valid field path) but the service's own parser
# refuses it: the two blocks of one group fan out differently, so `serve` exits 2.
BROKEN_TARGET = {"group": "training.example.com", "kind": "BrokenJob", "versions": ["v1alpha1"],
                 "groups": [{"schedulingPolicy": "spec.roles[*].scheduling.schedulingPolicy",
                             "disruptionMode": "spec.scheduling.disruptionMode"}]}


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


@pytest.fixture(scope="module")
def node(real_node):
    for text in (open(os.path.join(REPO, "examples", "crds", "trainjob.yaml")).read(), evaljob_crd()):
        real_node.kubectl("apply", "-f", "-", input=text)
    for crd in ("trainjobs", "evaljobs"):
        real_node.kubectl("wait", "--for=condition=Established", f"crd/{crd}.training.example.com", "--timeout=60s")
    for ns in (NS, TENANT):
        real_node.kubectl("create", "namespace", ns, check=False)
    return real_node


# ------------------------------------------------------------------ certificate mode provided

def test_provided_certificates_install_and_refuse_DIS_2(node, images, tmp_path):
    release = "wwp"
    name = fullname(release)
    ca, ca_key = make_ca("ww-e2e provided CA")
    dns = (name, f"{name}.{NS}", f"{name}.{NS}.svc", f"{name}.{NS}.svc.cluster.local")
    leaf, leaf_key = make_serving(ca, ca_key, dns, ())
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    (tmp_path / "tls.crt").write_bytes(pem(leaf))
    (tmp_path / "tls.key").write_bytes(pem_key(leaf_key))
    node.kubectl("create", "secret", "tls", "my-tls", "-n", NS, f"--cert={tmp_path / 'tls.crt'}",
                 f"--key={tmp_path / 'tls.key'}")
    try:
        values = chart_values(images, tmp_path, certificates={
            "mode": "provided", "provided": {"secretName": "my-tls", "caBundle": pem(ca).decode()}})
        t0 = time.monotonic()
        took = install(node, release, values)
        node.timings["provided: helm install --wait"] = took
        node.timings["provided: webhook called"] = wait_registered(node, release, t0)
        bundle = base64.b64encode(pem(ca)).decode()
        for kind, h in hooks(node, release).items():
            assert {w["clientConfig"]["caBundle"] for w in h["webhooks"]} == {bundle}, kind
        for ip in ready_pods(node, release).values():
            assert served_leaf(ip).serial_number == leaf.serial_number     # the Secret's certificate, as given
        proc = node.kubectl("create", "-f", "-", input=yaml.safe_dump(bad_trainjob("bad-provided")), check=False)
        assert proc.returncode != 0 and "(DIS-2)" in proc.stderr, proc.stderr
    finally:
        uninstall(node, release)
        node.kubectl("delete", "secret", "my-tls", "-n", NS, "--ignore-not-found")


# ------------------------------------------------------------------ no fail-closed outage at install

class Unchanged:
    """While a release installs: every ~0.3 s, the webhook configurations in the cluster and a
    dry-run create of a TrainJob that breaks DIS-2 (admitted while nothing judges it)."""

    def __init__(self, node):
        self.node, self.seen, self.refused, self.sent = node, set(), [], 0
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.is_set():
            self.seen |= all_hook_names(self.node)
            proc = self.node.kubectl("create", "-f", "-", "--dry-run=server", check=False,
                                     input=yaml.safe_dump(bad_trainjob(f"during-{self.sent}")))
            self.sent += 1
            if proc.returncode != 0:
                self.refused.append(proc.stderr.strip()[:300])
            self._stop.wait(0.3)

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join(60)


def _crashed_on_config(p: dict) -> bool:
    c = (p["status"].get("containerStatuses") or [{}])[0]
    return (c.get("lastState", {}).get("terminated") or c.get("state", {}).get("terminated") or {}).get("exitCode") == 2


def _never_pulled(p: dict) -> bool:
    c = (p["status"].get("containerStatuses") or [{}])[0]
    return (c.get("state", {}).get("waiting") or {}).get("reason") == "ErrImageNeverPull"


@pytest.mark.parametrize("broken", ["config", "image"])
def test_a_release_that_cannot_become_ready_fails_install_and_leaves_admission_as_it_was(node, images, tmp_path,
                                                                                            broken):
    release = f"wwb{broken[0]}"
    before = all_hook_names(node)
    assert not before, f"precondition: no webhook configuration in the cluster, found {before}"
    if broken == "config":
        values = chart_values(images, tmp_path, config={"targets": [TRAINJOB_TARGET, BROKEN_TARGET]})
        helm_tpl = node.helm("template", release, CHART, "-n", NS, "-f", values, check=False)
        assert helm_tpl.returncode == 0, f"the broken config must pass the chart's schema: {helm_tpl.stderr}"
    else:
        values = chart_values(images, tmp_path, image={"tag": "no-such-tag"})
    try:
        with Unchanged(node) as watch:
            t0 = time.monotonic()
            proc = node.helm("install", release, CHART, "-n", NS, "-f", values, "--wait", "--timeout", "30s",
                             check=False, timeout=120)
            took = time.monotonic() - t0
            time.sleep(2)
        assert proc.returncode != 0, f"helm install --wait succeeded with a broken {broken}:\n{proc.stdout}"
        assert "context deadline exceeded" in proc.stderr or "timed out" in proc.stderr, proc.stderr
        node.timings[f"broken {broken}: helm install --wait fails"] = took
        why = _crashed_on_config if broken == "config" else _never_pulled
        stuck = pods(node, release)
        assert stuck and all(why(p) and not is_ready(p) for p in stuck), [p["status"] for p in stuck]
        if broken == "config":
            log = node.kubectl("logs", "-n", NS, stuck[0]["metadata"]["name"], "--previous", check=False).stdout
            assert "targets[1].groups[0].disruptionMode" in log, log[-2000:]
        # Admission as before, all along: no configuration ever appeared, nothing was refused.
        assert watch.seen == set(), watch.seen
        assert watch.sent >= 20 and watch.refused == [], watch.refused[:3]
        summary.add(f"real node chart: broken {broken}: helm install --wait failed after {took:.1f} s "
                    f"({proc.stderr.strip().splitlines()[-1][:120]}); {watch.sent} creates during it, 0 refused, "
                    "no webhook configuration registered")
        # ... and objects are stored: a TrainJob breaking DIS-2, a labelled Pod.
        node.kubectl("create", "-f", "-", input=yaml.safe_dump(bad_trainjob(f"stored-{broken}")))
        node.kubectl("delete", "trainjob", f"stored-{broken}", "-n", TENANT)
    finally:
        node.helm("uninstall", release, "-n", NS, "--wait", "--timeout", "60s", check=False, timeout=120)
    assert all_hook_names(node) == set()


# ------------------------------------------------------------------ mode self: rotation, upgrade, replicas

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
        assert stuck and all(_crashed_on_config(p) and not is_ready(p) for p in stuck), [p["status"] for p in stuck]
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
