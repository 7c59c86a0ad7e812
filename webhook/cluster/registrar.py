"""The serving Pods register their own webhook configurations (the chart's
Service mode), as Kyverno's admission controller does: only once this Pod
answers /readyz *and* is a ready endpoint of its Service, so no configuration
ever sends the API server to a Service with no ready endpoint. A release whose
Pods never become Ready leaves admission exactly as it was.

- Each configuration carries the revision it was written for; a Pod of an
  older revision (still terminating during a rollout) never overwrites a newer
  registration. The order is the Deployment's rollout revision (its
  ReplicaSet's `deployment.kubernetes.io/revision`, read at each step): a
  rollback, by `helm rollback` or `kubectl rollout undo`, makes the old
  ReplicaSet the newest, where the release revision the chart rendered into
  the manifest would stay the old number (helm rollback re-applies the old
  manifest). Where the rollout revision cannot be read, the release revision
  decides.
- Each is owned by the release's ClusterRole, so the garbage collector deletes
  it when `helm uninstall` deletes the ClusterRole; once the owner is gone,
  nothing is registered again.
- The caBundle: the manifest's own (provided mode), else the one already
  registered (kept: cert-manager's cainjector or the certificate sync wrote
  it), else the serving directory's ca.crt.
- Never a rule that matches nothing: before writing, every rule of the targets'
  webhooks must name the resource the cluster's discovery serves for a configured
  target's kind (webhook.cluster.discovery). Until they do, nothing is written,
  and while no registration of this revision exists the Pod is not ready, with
  the reason in /readyz, a log line and `workload_webhook_targets_unserved`. A
  Pod whose revision is registered stays ready: a target CRD deleted later then
  matches nothing harmlessly, and refusing to serve would refuse every object.

`prepare` is pure (unit-tested); `Registrar` does the I/O through webhook/cluster/api.py,
on the objects as the API server sends them (camelCase dicts), writing as REGISTRAR
(its requests: tests/unit/test_registrar_requests.py; proven on a real node)."""
from __future__ import annotations

import base64
import copy
import logging
import mmap
import os
import ssl
import threading
import urllib.request
from typing import NamedTuple

import yaml

from webhook.cluster.api import REGISTRAR, Api, path
from webhook.cluster.webhook_configurations import KINDS, PLURALS, ready_endpoints

log = logging.getLogger("workload_webhook.registrar")

ANNOTATION_REVISION = "workload-webhook.k8s.io/revision"            # the release revision (helm)
ANNOTATION_ROLLOUT = "workload-webhook.k8s.io/rollout-revision"     # the Deployment's rollout revision
RS_REVISION = "deployment.kubernetes.io/revision"
TIMEOUT = (5, 15)
SLICES_DEADLINE = 60.0      # seconds for the whole EndpointSlice LIST: a step that long fails and is tried again
ADMISSION = "admissionregistration.k8s.io"


class RegistrationError(ValueError):
    pass


def load_manifests(path: str) -> list[dict]:
    """The two configurations the chart rendered; anything else is refused at start."""
    try:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise RegistrationError(f"--register {path}: {str(exc).splitlines()[0]}") from None
    kinds = sorted(d.get("kind", "") for d in docs if isinstance(d, dict))
    if len(docs) != len(kinds) or not docs or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
        raise RegistrationError(f"--register {path}: expected one ValidatingWebhookConfiguration and/or one "
                                f"MutatingWebhookConfiguration, found {kinds or 'nothing'}")
    return docs


class Revision(NamedTuple):
    """What a registration was written for: the release revision, and the Deployment's
    rollout revision when it could be read."""
    release: int
    rollout: int | None = None

    def annotations(self) -> dict[str, str]:
        out = {ANNOTATION_REVISION: str(self.release)}
        if self.rollout is not None:
            out[ANNOTATION_ROLLOUT] = str(self.rollout)
        return out

    def __str__(self) -> str:
        return str(self.release) + (f", rollout {self.rollout}" if self.rollout is not None else "")


def older(a: Revision, b: Revision) -> bool:
    """Was `a` written for an older rollout than `b`? By rollout revision where both know
    it (a rollback makes an old release the newest rollout), else by release revision."""
    if a.rollout is not None and b.rollout is not None:
        return a.rollout < b.rollout
    return a.release < b.release


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def revision_of(obj: dict | None) -> Revision:
    annotations = (((obj or {}).get("metadata") or {}).get("annotations") or {})
    return Revision(_int(annotations.get(ANNOTATION_REVISION)) or 0, _int(annotations.get(ANNOTATION_ROLLOUT)))


def prepare(doc: dict, existing: dict | None, revision: Revision, owner: dict,
            ca_file_bundle: bytes | None) -> dict | None:
    """The object to write, or None when the registered one is newer (or already this)."""
    if existing is not None and older(revision, revision_of(existing)):
        return None
    out = copy.deepcopy(doc)
    meta = out.setdefault("metadata", {})
    kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in (ANNOTATION_REVISION, ANNOTATION_ROLLOUT)}
    meta["annotations"] = {**kept, **revision.annotations()}
    meta["ownerReferences"] = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                "name": owner["name"], "uid": owner["uid"]}]
    registered = {h.get("name"): (h.get("clientConfig") or {}).get("caBundle")
                  for h in ((existing or {}).get("webhooks") or [])}
    fallback = base64.b64encode(ca_file_bundle).decode() if ca_file_bundle else None
    for hook in out.get("webhooks") or []:
        cc = hook.setdefault("clientConfig", {})
        bundle = cc.get("caBundle") or registered.get(hook.get("name")) or fallback
        if bundle:
            cc["caBundle"] = bundle
    if existing is not None:
        meta["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
        if _same(out, existing):
            return None
    return out


def _same(new: dict, existing: dict) -> bool:
    keys = ("webhooks",)
    ann = lambda o: ((o.get("metadata") or {}).get("annotations") or {})  # noqa: E731
    owners = lambda o: [(r.get("kind"), r.get("uid")) for r in (o.get("metadata") or {}).get("ownerReferences") or []]  # noqa: E731
    return (all(_strip(new.get(k)) == _strip(existing.get(k)) for k in keys)
            and all(ann(new).get(k) == ann(existing).get(k) for k in (ANNOTATION_REVISION, ANNOTATION_ROLLOUT))
            and owners(new) == owners(existing))


def _strip(hooks):
    """Webhooks as written, without the server's defaults we never set."""
    return [{k: v for k, v in (h or {}).items() if v not in (None, [], {})} for h in hooks or []]


def endpoint_ready(slices: list[dict], pod_ip: str | None) -> bool:
    """This Pod's address (or, without one, any address) is a ready endpoint."""
    return any(pod_ip is None or address == pod_ip for address, _ in ready_endpoints(slices))


class SharedLine:
    """One line of text the gunicorn master writes and every worker reads (/readyz): an
    anonymous shared mapping made before the workers are forked, so they see each write.
    The text is written before its length, and a length is only zeroed to clear it, so a
    reader never sees "" while a reason is being replaced."""
    SIZE = 4096

    def __init__(self, text: str | None = None):
        self._map = mmap.mmap(-1, self.SIZE)
        self.set(text)

    def set(self, text: str | None) -> None:
        data = (text or "").encode()[:self.SIZE - 4].decode("utf-8", "ignore").encode()
        self._map[4:4 + len(data)] = data
        self._map[:4] = len(data).to_bytes(4, "little")

    def get(self) -> str | None:
        n = min(int.from_bytes(self._map[:4], "little"), self.SIZE - 4)
        return self._map[4:4 + n].decode("utf-8", "replace") or None


UNSERVED = "targets not served"


class Step(NamedTuple):
    """What one registration attempt did: the words for the log, and as data whether a
    target is not served or the attempt failed (loud in the log; the pace of the next try)."""
    text: str
    unserved: bool = False
    failed: bool = False


class Registrar:
    """Runs in the gunicorn master: waits, registers, then checks every interval."""

    def __init__(self, api_client, manifests: list[dict], release: int, owner: str, service: str | None,
                 pod_ip: str | None, local_readyz: str, ca_file: str, targets: tuple = (),
                 pod: tuple[str, str] | None = None):
        self.api = Api.of(api_client, field_manager=REGISTRAR)
        self.manifests, self.owner_name = manifests, owner
        self.revision = Revision(release)       # the rollout revision is read at each step
        self.pod, self._replicaset = pod, None  # (namespace, name) of this Pod; its ReplicaSet, once found
        self.service, self.pod_ip, self.local_readyz, self.ca_file = service, pod_ip, local_readyz, ca_file
        self.targets = tuple(targets)
        self.registered = False
        # Read by the workers' /readyz; set before they fork: not ready until the first check.
        self.unready = SharedLine("checking the targets against the cluster's discovery" if self.targets else None)
        self._flagged: set[str] = set()
        # Imported here, in the main thread once serve has set up multiprocess mode: an import in
        # the registration thread could hold the import lock while gunicorn forks a worker.
        from webhook import metrics
        from webhook.cluster import discovery
        self._discovery, self._unserved_gauge = discovery, metrics.TARGETS_UNSERVED

    def unready_reason(self) -> str | None:
        """Why this Pod must not be ready yet (the targets), or None."""
        return self.unready.get()

    def _unserved(self) -> list[str]:
        """What stops a registration of these manifests (webhook.cluster.discovery.check_rules)."""
        if not self.targets:
            return []
        served = self._discovery.from_cluster(self.api, [t.group for t in self.targets])
        problems = self._discovery.check_rules([h for d in self.manifests for h in d.get("webhooks") or []],
                                         self.targets, served)
        subjects = {p.split(": ", 1)[0] for p in problems}
        for subject in subjects | self._flagged:
            self._unserved_gauge.labels(subject).set(1 if subject in subjects else 0)
        self._flagged = subjects
        return problems

    def _rollout(self) -> int | None:
        """This Pod's ReplicaSet's rollout revision (`deployment.kubernetes.io/revision`), or None
        when there is none to read (no Deployment, no right to read it: the release decides)."""
        if self.pod is None:
            return None
        from kubernetes.client.rest import ApiException
        namespace, name = self.pod
        try:
            if self._replicaset is None:
                pod = self.api.expect("GET", path("", "v1", "pods", namespace, name), timeout=TIMEOUT)
                self._replicaset = next((r.get("name") or "" for r in _meta(pod).get("ownerReferences") or []
                                         if r.get("controller") and r.get("kind") == "ReplicaSet"), "")
            if not self._replicaset:
                return None
            rs = self.api.expect("GET", path("apps", "v1", "replicasets", namespace, self._replicaset),
                                 timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status in (403, 404):
                return None
            raise
        return _int((_meta(rs).get("annotations") or {}).get(RS_REVISION))

    def _read(self, doc: dict) -> dict | None:
        """The registered configuration of `doc`'s kind and name; None when there is none (404)."""
        from kubernetes.client.rest import ApiException
        try:
            return self.api.expect("GET", _config_path(doc, doc["metadata"]["name"]), timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    def _registered_revisions(self) -> list[Revision] | None:
        """The revisions of the registered configurations; None when one is missing."""
        revisions = []
        for doc in self.manifests:
            existing = self._read(doc)
            if existing is None:
                return None
            revisions.append(revision_of(existing))
        return revisions

    def _ready_here(self) -> bool:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE   # our own server, on loopback
        try:
            with urllib.request.urlopen(self.local_readyz, context=ctx, timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def _ready_in_service(self) -> bool:
        if not self.service:
            return True
        namespace, _, name = self.service.partition("/")
        slices = []
        for page in self.api.pages(path("discovery.k8s.io", "v1", "endpointslices", namespace),
                                   {"labelSelector": f"kubernetes.io/service-name={name}"},
                                   timeout=TIMEOUT, deadline=SLICES_DEADLINE):
            slices += page.get("items") or []
        return endpoint_ready(slices, self.pod_ip)

    def _owner(self) -> dict | None:
        from kubernetes.client.rest import ApiException
        try:
            role = self.api.expect("GET", path("rbac.authorization.k8s.io", "v1", "clusterroles", name=self.owner_name),
                                   timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return {"name": self.owner_name, "uid": _meta(role).get("uid")}

    def step(self) -> "Step":
        """One attempt; returns what happened (for the log and the tests), as a value."""
        self.revision = Revision(self.revision.release, self._rollout())
        problems = self._unserved()
        if problems:
            registered = self._registered_revisions()
            said = f"{UNSERVED}: {'; '.join(problems)}"
            if registered is None or any(older(r, self.revision) for r in registered):
                self.unready.set(said)
                return Step(f"waiting: {said}", unserved=True)
            self.unready.set(None)
            self.registered = True          # this revision is registered: check at the slow pace
            return Step(f"not updating: {said} (revision {', '.join(map(str, registered))} stays registered)",
                        unserved=True)
        self.unready.set(None)
        if not self._ready_here():
            return Step("waiting: this Pod is not ready")
        if not self._ready_in_service():
            return Step("waiting: this Pod is not yet a ready endpoint of its Service")
        owner = self._owner()
        if owner is None:
            return Step(f"not registering: the owner ClusterRole {self.owner_name} is gone (uninstalled)")
        try:
            with open(self.ca_file, "rb") as f:
                ca_bundle = f.read() or None
        except OSError:
            ca_bundle = None
        written = []
        for doc in self.manifests:
            if self._write(doc, owner, ca_bundle):
                written.append(doc["kind"])
        self.registered = True
        return Step(f"registered {', '.join(written)} (revision {self.revision})" if written else "up to date")

    def _write(self, doc: dict, owner: dict, ca_bundle: bytes | None) -> bool:
        from kubernetes.client.rest import ApiException
        name = doc["metadata"]["name"]
        for _ in range(5):
            existing = self._read(doc)
            body = prepare(doc, existing, self.revision, owner, ca_bundle)
            if body is None:
                return False
            try:                            # the layer names fieldManager=REGISTRAR on both
                if existing is None:
                    self.api.expect("POST", _config_path(doc), body, timeout=TIMEOUT)
                else:
                    self.api.expect("PUT", _config_path(doc, name), body, timeout=TIMEOUT)
                return True
            except ApiException as exc:
                if exc.status != 409:       # a concurrent writer (another replica): read again
                    raise
        raise RuntimeError(f"{doc['kind']} {name} kept changing under us")

    def run(self, stop: threading.Event, interval: float = 30.0, wait_interval: float = 1.0,
            unserved_interval: float = 5.0) -> None:
        """`unserved_interval`: while a target is not served (a CRD yet to come), discovery
        is asked this often, not at every `wait_interval`."""
        last = None
        while not stop.is_set():
            try:
                said = self.step()
            except Exception as exc:        # keep trying; say why
                said = Step(f"registration failed: {(str(exc).splitlines() or [type(exc).__name__])[0][:300]}",
                            failed=True)
            if said != last:
                (log.warning if said.failed or said.unserved else log.info)("webhook registration: %s", said.text)
                last = said
            stop.wait(interval if self.registered else unserved_interval if said.unserved else wait_interval)


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _config_path(doc: dict, name: str | None = None) -> str:
    """Where `doc`'s kind of webhook configuration lives (cluster-scoped)."""
    return path(ADMISSION, "v1", PLURALS[doc["kind"]], name=name)


def from_flags(api_client, manifests_path: str, owner: str, service: str | None, port: int, bind: str,
               cert_dir: str, environ=os.environ, targets: tuple = ()) -> Registrar:
    host = "127.0.0.1" if bind in ("0.0.0.0", "", "::") else bind
    host = f"[{host}]" if ":" in host else host
    try:
        revision = int(environ.get("WW_REGISTER_REVISION") or 0)
    except ValueError:
        raise RegistrationError(f"WW_REGISTER_REVISION: not a number: {environ['WW_REGISTER_REVISION']!r}") from None
    pod = (environ["POD_NAMESPACE"], environ["POD_NAME"]) if environ.get("POD_NAMESPACE") and environ.get("POD_NAME") \
        else None
    return Registrar(api_client, load_manifests(manifests_path), revision, owner, service, environ.get("POD_IP") or None,
                     f"https://{host}:{port}/readyz", os.path.join(cert_dir, "ca.crt"), targets, pod)
