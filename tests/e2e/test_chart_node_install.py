"""The chart's life on the real node at install (issue 19, points 4 and 5):

- certificate mode `provided`: an existing kubernetes.io/tls Secret signed by a CA made here;
- a release whose Pods cannot become Ready (a config serve refuses, an image that is not there)
  fails `helm install --wait` and never registers anything: admission is as before, throughout.

Its life after install (rotation, upgrades, replica loss) is in test_chart_node_rollout.py.
Figures go to the terminal summary."""
from __future__ import annotations

import base64
import contextlib
import threading
import time

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from tests.e2e import summary
from tests.e2e.chart_node_release import (NS, TENANT, all_hook_names, chart_values, crashed_on_config, fullname, hooks,
                                          install, is_ready, pods, prepared, ready_pods, served_leaf, uninstall,
                                          wait_registered)
from tests.e2e.test_chart import CHART, TRAINJOB_TARGET
from tests.e2e.test_chart_node import bad_trainjob
from webhook.certificates.files import make_ca, make_serving, pem_key

# Passes values.schema.json (each path is a valid field path) but the service's own parser
# refuses it: the two blocks of one group fan out differently, so `serve` exits 2.
BROKEN_TARGET = {"group": "training.example.com", "kind": "BrokenJob", "versions": ["v1alpha1"],
                 "groups": [{"schedulingPolicy": "spec.roles[*].scheduling.schedulingPolicy",
                             "disruptionMode": "spec.scheduling.disruptionMode"}]}


@pytest.fixture(scope="module")
def node(real_node):
    return prepared(real_node)


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

class Watched:
    """What `unchanged` saw: the webhook configurations, creates sent and refused."""

    def __init__(self):
        self.seen, self.refused, self.sent = set(), [], 0


@contextlib.contextmanager
def unchanged(node):
    """While a release installs: every ~0.3 s, the webhook configurations in the cluster and a
    dry-run create of a TrainJob that breaks DIS-2 (admitted while nothing judges it)."""
    watched, stop = Watched(), threading.Event()

    def look():
        while not stop.is_set():
            watched.seen |= all_hook_names(node)
            proc = node.kubectl("create", "-f", "-", "--dry-run=server", check=False,
                                input=yaml.safe_dump(bad_trainjob(f"during-{watched.sent}")))
            watched.sent += 1
            if proc.returncode != 0:
                watched.refused.append(proc.stderr.strip()[:300])
            stop.wait(0.3)
    thread = threading.Thread(target=look, daemon=True)
    thread.start()
    try:
        yield watched
    finally:
        stop.set()
        thread.join(60)


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
        with unchanged(node) as watch:
            t0 = time.monotonic()
            proc = node.helm("install", release, CHART, "-n", NS, "-f", values, "--wait", "--timeout", "30s",
                             check=False, timeout=120)
            took = time.monotonic() - t0
            time.sleep(2)
        assert proc.returncode != 0, f"helm install --wait succeeded with a broken {broken}:\n{proc.stdout}"
        assert "context deadline exceeded" in proc.stderr or "timed out" in proc.stderr, proc.stderr
        node.timings[f"broken {broken}: helm install --wait fails"] = took
        why = crashed_on_config if broken == "config" else _never_pulled
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
