"""What the serving Pods register (webhook.cluster.registrar.prepare): the
chart's manifests with the revision and the owner, the caBundle kept or
filled, never over a newer revision; and when a Pod counts as a ready endpoint."""
import base64

import pytest
import yaml

from webhook.cluster import registrar

R = registrar.Revision
OWNER = {"name": "r-workload-webhook", "uid": "1234"}


def doc(bundle=None, annotations=None):
    cc = {"service": {"namespace": "ns", "name": "svc", "path": "/validate", "port": 443}}
    if bundle:
        cc["caBundle"] = bundle
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "r-workload-webhook", **({"annotations": annotations} if annotations else {})},
            "webhooks": [{"name": "a.validate.example.com", "clientConfig": cc, "sideEffects": "None"},
                         {"name": "b.validate.example.com", "clientConfig": dict(cc), "sideEffects": "None"}]}


def stored(revision, bundle="c3RvcmVk", rv="7", rollout=None):
    out = doc(bundle)
    out["metadata"].update(resourceVersion=rv, annotations=R(revision, rollout).annotations(),
                           ownerReferences=[{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                             "name": OWNER["name"], "uid": OWNER["uid"]}])
    return out


def test_first_registration_carries_revision_owner_and_the_ca_file():
    out = registrar.prepare(doc(annotations={"cert-manager.io/inject-ca-from": "ns/x"}), None, R(3), OWNER, b"PEM")
    meta = out["metadata"]
    assert meta["annotations"] == {"cert-manager.io/inject-ca-from": "ns/x", registrar.ANNOTATION_REVISION: "3"}
    assert meta["ownerReferences"] == [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "name": OWNER["name"], "uid": "1234"}]
    assert {h["clientConfig"]["caBundle"] for h in out["webhooks"]} == {base64.b64encode(b"PEM").decode()}
    assert "resourceVersion" not in meta


def test_the_manifests_bundle_wins_then_the_registered_one():
    out = registrar.prepare(doc("cHJvdmlkZWQ="), stored(1), R(2), OWNER, b"PEM")
    assert {h["clientConfig"]["caBundle"] for h in out["webhooks"]} == {"cHJvdmlkZWQ="}
    out = registrar.prepare(doc(), stored(1), R(2), OWNER, b"PEM")
    assert {h["clientConfig"]["caBundle"] for h in out["webhooks"]} == {"c3RvcmVk"}   # cainjector's / the sync's
    assert out["metadata"]["resourceVersion"] == "7"


def test_a_newer_registration_is_never_overwritten_and_an_equal_one_is_left_alone():
    assert registrar.prepare(doc(), stored(5), R(4), OWNER, b"PEM") is None
    assert registrar.prepare(doc(), stored(4), R(4), OWNER, b"PEM") is None
    assert registrar.prepare(doc(), stored(4), R(5), OWNER, b"PEM") is not None


def test_after_a_rollback_the_newest_rollout_wins_whatever_release_revision_its_manifest_carries():
    # helm rollback re-applies revision 4's manifest (its `revision: 4`) after revision 5 registered;
    # the Deployment makes 4's ReplicaSet the newest rollout (3 after 1 and 2).
    assert registrar.prepare(doc(), stored(5, rollout=2), R(4, rollout=3), OWNER, b"PEM") is not None
    assert registrar.prepare(doc(), stored(4, rollout=3), R(5, rollout=2), OWNER, b"PEM") is None   # the replaced Pods
    out = registrar.prepare(doc(), stored(5, rollout=2), R(4, rollout=3), OWNER, b"PEM")
    assert out["metadata"]["annotations"] == {registrar.ANNOTATION_REVISION: "4", registrar.ANNOTATION_ROLLOUT: "3"}


def test_without_a_rollout_revision_on_either_side_the_release_revision_decides():
    assert registrar.prepare(doc(), stored(5), R(4, rollout=3), OWNER, b"PEM") is None      # written by 0.1.0 Pods
    assert registrar.prepare(doc(), stored(4), R(5, rollout=1), OWNER, b"PEM") is not None
    assert registrar.prepare(doc(), stored(5, rollout=2), R(6), OWNER, b"PEM") is not None  # no Deployment to read


def test_a_changed_owner_is_written_again():
    assert registrar.prepare(doc(), stored(4), R(4), {"name": OWNER["name"], "uid": "new"}, b"PEM") is not None


def test_manifests_must_be_the_two_configurations(tmp_path):
    good = tmp_path / "w.yaml"
    good.write_text(yaml.safe_dump_all([doc(), {**doc(), "kind": "MutatingWebhookConfiguration"}]))
    assert [d["kind"] for d in registrar.load_manifests(str(good))] == list(registrar.KINDS)
    for text in ("", "kind: Secret\n", yaml.safe_dump_all([doc(), doc()]), "a: [\n"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(registrar.RegistrationError):
            registrar.load_manifests(str(bad))
    with pytest.raises(registrar.RegistrationError):
        registrar.load_manifests(str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize("slices, pod_ip, ready", [
    ([], "10.1.0.5", False),
    ([{"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": True}}]}], "10.1.0.5", True),
    ([{"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": False}}]}], "10.1.0.5", False),
    ([{"endpoints": [{"addresses": ["10.1.0.6"], "conditions": {"ready": True}}]}], "10.1.0.5", False),
    ([{"endpoints": [{"addresses": ["10.1.0.6"], "conditions": {"ready": True}}]}], None, True),
    ([{"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {}}]}], "10.1.0.5", True),   # unknown counts as ready
    ([{"endpoints": None}], None, False),
])
def test_ready_endpoint(slices, pod_ip, ready):
    assert registrar.endpoint_ready(slices, pod_ip) is ready


def test_revision_from_the_environment(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(doc()))
    reg = registrar.from_flags(None, str(path), "owner", "ns/svc", 8443, "0.0.0.0", str(tmp_path),
                               environ={"WW_REGISTER_REVISION": "7", "POD_IP": "10.1.0.5", "POD_NAME": "p",
                                        "POD_NAMESPACE": "ns"})
    assert (reg.revision, reg.pod_ip, reg.local_readyz) == (R(7), "10.1.0.5", "https://127.0.0.1:8443/readyz")
    assert reg.pod == ("ns", "p")
    with pytest.raises(registrar.RegistrationError):
        registrar.from_flags(None, str(path), "owner", None, 8443, "::1", str(tmp_path),
                             environ={"WW_REGISTER_REVISION": "x"})


def test_the_masters_reason_reaches_a_forked_worker():
    """/readyz runs in the workers; the registrar runs in the master. What the master writes
    after the fork is what a worker reads (as gunicorn forks them)."""
    import os
    line = registrar.SharedLine("checking")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                          # the "worker": wait for the master, then say what it sees
        os.close(write)
        os.read(read, 1)
        seen = line.get() or "<none>"
        os._exit(0 if seen == "targets not served: X" else 1)
    os.close(read)
    line.set("targets not served: X")
    os.write(write, b"!")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    line.set(None)
    assert line.get() is None
    line.set("a" + "é" * 5000)            # bounded: cut at a character, never past the page
    assert line.get() == "a" + "é" * ((registrar.SharedLine.SIZE - 5) // 2)


def test_run_is_loud_by_what_a_step_says_as_data_never_by_its_words(caplog):
    """An unserved target and a failed attempt are warnings, the rest info: decided by the Step's
    flags, so words that match none of the old prefixes change nothing."""
    import logging
    import threading
    from types import SimpleNamespace
    from webhook.cluster.registrar import Registrar, Step
    steps = iter([Step("zz unserved", unserved=True), Step("zz fine"), RuntimeError("zz boom")])
    stop = threading.Event()

    def step():
        try:
            s = next(steps)
        except StopIteration:
            stop.set()
            return Step("zz fine")
        if isinstance(s, Exception):
            raise s
        return s
    fake = SimpleNamespace(step=step, registered=False)
    with caplog.at_level(logging.INFO, logger="workload_webhook.registrar"):
        Registrar.run(fake, stop, interval=0, wait_interval=0, unserved_interval=0)
    levels = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert levels[:3] == [(logging.WARNING, "webhook registration: zz unserved"),
                          (logging.INFO, "webhook registration: zz fine"),
                          (logging.WARNING, "webhook registration: registration failed: zz boom")], levels
