"""The real CRDs of the operators that embed the blocks (../shared/adopters,
never copied into this repo), and a `workload-webhook serve` registered for
just those CRDs with a given configuration (URL mode, its own registration
name, so the session's webhook is untouched)."""
from __future__ import annotations

import os
import time

import yaml

from tests.server.harness import REPO, Server
from webhook import config as config_mod
from webhook.registration import SUFFIX, Endpoint, target_rules

ADOPTERS = os.path.normpath(os.path.join(REPO, "..", "shared", "adopters"))
JOBSET_137 = "jobset-v1.37-a3bde49b.crd.yaml"      # the embedded Job template only
JOBSET_WAS = "jobset-was-5e28553e.crd.yaml"        # plus spec.scheduling (pull request 1250)
LWS_WAS = "lws-was-27c50700.crd.yaml"              # spec.scheduling (pull request 982)
ALL_GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "DRAWorkloadResourceClaims": True,
             "CompositePodGroup": True, "PodGroupPreemptionPolicy": True, "WorkloadWithJob": True}


def trainjob_crd_copy(group: str, kind: str, plural: str, version: str = "v1") -> str:
    """examples/crds/trainjob.yaml under another group/kind, for tests that must not meet the
    session webhook's TrainJob registration."""
    text = open(os.path.join(REPO, "examples", "crds", "trainjob.yaml")).read()
    return text.replace("trainjobs.training.example.com", f"{plural}.{group}").replace("training.example.com", group) \
        .replace("TrainJobList", f"{kind}List").replace("TrainJob", kind).replace("trainjobs", plural) \
        .replace("trainjob", kind.lower()).replace("v1alpha1", version)


def crd_path(name: str) -> str:
    path = os.path.join(ADOPTERS, name)
    if not os.path.isfile(path):
        raise AssertionError(f"adopter CRD {path} is missing: the tests read ../shared/adopters (CI has it)")
    return path


def install_crd(kubectl, name: str) -> str:
    """`kubectl create` (the LWS CRD is too large for client-side apply's
    annotation); replaced when a different revision of the same CRD is loaded."""
    path = crd_path(name)
    with open(path) as f:
        crd = yaml.safe_load(f)
    crd_name = crd["metadata"]["name"]
    current = kubectl("get", "crd", crd_name, "-o", "jsonpath={.metadata.annotations.adopter-file}", check=False)
    if current.returncode == 0 and current.stdout.strip() == name:
        return crd_name
    if current.returncode == 0:
        kubectl("delete", "crd", crd_name, "--wait=true", "--timeout=120s")
    crd["metadata"].setdefault("annotations", {})["adopter-file"] = name
    kubectl("create", "-f", "-", stdin=yaml.safe_dump(crd), timeout=120)
    established = "jsonpath={.status.conditions[?(@.type=='Established')].status}"
    deadline = time.monotonic() + 60
    while kubectl("get", "crd", crd_name, "-o", established, check=False).stdout.strip() != "True":
        if time.monotonic() > deadline:
            raise AssertionError(f"CRD {crd_name} never became Established")
        time.sleep(0.2)
    # Discovery is served asynchronously: wait until the resource can be listed.
    while kubectl("get", crd_name, "-A", "--request-timeout=5s", check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"{crd_name} never served")
        time.sleep(0.2)
    return crd_name


class ProfileWebhook:
    """A served webhook with `config`, registered for the config's targets only
    (`extra`: serve's flags, default no cluster)."""

    def __init__(self, kubectl, workdir: str, name: str, config: dict, extra: list[str] | None = None):
        self.kubectl, self.name = kubectl, name
        os.makedirs(workdir, exist_ok=True)
        path = os.path.join(workdir, "config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.config = config_mod.load(path)
        self.server = Server(workdir, config=path, extra=extra or ["--cluster", "disabled"])

    def start(self, probe=None) -> "ProfileWebhook":
        self.server.start()
        with open(os.path.join(self.server.cert_dir, "ca.crt"), "rb") as f:
            endpoint = Endpoint(f.read(), url=f"https://127.0.0.1:{self.server.port}")
        common = {"sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                  "timeoutSeconds": 10, "matchPolicy": "Equivalent"}
        meta = {"name": self.name}
        self.kubectl.apply([
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": meta,
             "webhooks": [{"name": f"{self.name}.validate.{SUFFIX}", "clientConfig": endpoint.client_config("/validate"),
                           "rules": target_rules(self.config, ["CREATE", "UPDATE"]), **common}]},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": meta,
             "webhooks": [{"name": f"{self.name}.mutate.{SUFFIX}", "clientConfig": endpoint.client_config("/mutate"),
                           "rules": target_rules(self.config, ["CREATE"]), "reinvocationPolicy": "IfNeeded", **common}]},
        ])
        if probe is not None:
            deadline = time.monotonic() + 60
            while not probe():
                if time.monotonic() > deadline:
                    raise AssertionError(f"the API server never called {self.name}:\n{self.server.log()[-2000:]}")
                time.sleep(0.3)
        return self

    def stop(self) -> None:
        self.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", self.name,
                     "--ignore-not-found", check=False)
        self.server.stop()
