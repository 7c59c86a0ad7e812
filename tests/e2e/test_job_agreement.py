"""A Job's `spec.scheduling` judged by kube-apiserver (batch/v1, WorkloadWithJob
on) and the same JobSpec embedded in a real JobSet (the CRD of
../shared/adopters, JobSet's "update kube to 1.37" commit) judged by this
webhook with the `job-template` profile: the same verdict for every case of
tests/e2e/job_cases.py, creates and updates, and when denied the same error
types at the same paths (after the prefix: `spec.` for the Job,
`spec.replicatedJobs[0].template.spec.` for the JobSet). The same Job is also
judged offline, as `validate` judges a manifest (the engine's built-in Job, no
profile): the same error types at the same paths as kube-apiserver, and none of
its errors carries a rule id (the Job's rules are the API server's). The
table's counts are printed."""
from __future__ import annotations

import copy
from collections import Counter

import pytest

from tests.e2e import adopters, summary
from tests.e2e.rest import Api
from tests.e2e.job_cases import CREATES, UPDATES
from webhook import engine
from webhook.config import from_dict

NS = "job-agreement"
JOB_PREFIX = "spec."
EMBED_PREFIX = "spec.replicatedJobs[0].template.spec."
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
CASE_FIELDS = ("scheduling", "parallelism", "completions")
TALLY: Counter = Counter()
DISAGREE: list = []
OFFLINE_DISAGREE: list = []
OFFLINE = from_dict({"featureGates": adopters.ALL_GATES})


def verdict(status: int, body: dict, prefix: str) -> tuple[bool, frozenset]:
    if status in (200, 201):
        return True, frozenset()
    assert status == 422, body
    # A CRD schema error comes with a note that its CEL rules were skipped: not a field's error.
    causes = [c for c in body.get("details", {}).get("causes", [])
              if "some validation rules were not checked" not in c.get("message", "")]
    assert causes, f"a denial without causes: {body.get('message')}"
    return False, frozenset((c["reason"].removeprefix("FieldValue"), "spec." + c["field"].removeprefix(prefix))
                            for c in causes)


def offline(obj: dict, old: dict | None = None) -> tuple[bool, frozenset]:
    """The built-in Job judging of `validate` (scope cli): its verdict, and its errors as (type, path)."""
    found = engine.validate(engine.Request.for_object(obj, old), OFFLINE, scope="cli")
    assert not [e for e in found.errors if e.rule], f"a Job's rules are mirrors: {[str(e) for e in found.errors]}"
    return found.allowed, frozenset((e.type, str(e.field)) for e in found.errors)


def with_case(spec: dict, fields: dict) -> dict:
    out = {k: v for k, v in spec.items() if k not in CASE_FIELDS}
    out.update(copy.deepcopy(fields))
    return out


def job(name: str, fields: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": with_case({"template": copy.deepcopy(POD)}, fields)}


def jobset(name: str, fields: dict) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1,
                                         "template": {"spec": with_case({"template": copy.deepcopy(POD)}, fields)}}]}}


JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
JOBSETS = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"


@pytest.fixture(scope="module")
def hook(cluster, kubectl, tmp_path_factory):
    kubectl("create", "namespace", NS, check=False)
    adopters.install_crd(kubectl, adopters.JOBSET_137)
    config = {"featureGates": adopters.ALL_GATES,
              "profiles": [{"name": "job-template", "group": "jobset.x-k8s.io", "kind": "JobSet",
                            "versions": ["v1alpha2"], "jobSpec": "spec.replicatedJobs[*].template.spec"}]}
    api = Api(cluster)
    probe_obj = jobset("probe", {"scheduling": {"disruptionMode": {"all": {}}}})

    def probe() -> bool:
        return api.call("POST", f"{JOBSETS}?dryRun=All", probe_obj)[0] == 422

    served = adopters.ProfileWebhook(kubectl, str(tmp_path_factory.mktemp("job-agreement")), "job-agreement",
                                     config).start(probe)
    yield api
    served.stop()
    summary.add(f"Job agreement with kube-apiserver: {sum(TALLY.values())} cases "
          f"({TALLY['CREATE allowed']} creates allowed, {TALLY['CREATE denied']} creates denied, "
          f"{TALLY['UPDATE allowed']} updates allowed, {TALLY['UPDATE denied']} updates denied); "
          f"{len(DISAGREE)} disagreements; offline (built-in Job): {len(OFFLINE_DISAGREE)} disagreements")


def test_the_table_is_large():
    assert len(CREATES) + len(UPDATES) >= 60 and len(UPDATES) >= 20


def _put_over(api: Api, base: str, name: str, old_obj: dict, new_fields: dict, spec_of,
              seen: list | None = None) -> tuple[int, dict]:
    """The dry-run PUT of the case's new fields over the stored old object; `seen` gets (new, stored)."""
    status, stored = api.call("POST", base, old_obj)
    assert status == 201, f"the case's old object is not creatable: {stored.get('message')}"
    new = copy.deepcopy(stored)
    spec = spec_of(new)
    spec.clear()
    spec.update(with_case(spec_of(stored), new_fields))
    if seen is not None:
        seen += [new, stored]
    try:
        return api.call("PUT", f"{base}/{name}?dryRun=All", new)
    finally:
        api.call("DELETE", f"{base}/{name}", {"propagationPolicy": "Background"})


def _job_spec(obj):
    return obj["spec"]


def _embedded_spec(obj):
    return obj["spec"]["replicatedJobs"][0]["template"]["spec"]


def _record(op: str, case_id: str, apiserver, ours, message: str | None = None, judged_offline=None):
    TALLY[f"{op} {'allowed' if apiserver[0] else 'denied'}"] += 1
    if apiserver != ours:
        DISAGREE.append(case_id)
    if judged_offline != apiserver:
        OFFLINE_DISAGREE.append(case_id)
    assert ours[0] == apiserver[0], f"kube-apiserver: {sorted(apiserver[1])}; webhook: {sorted(ours[1])}"
    assert ours[1] == apiserver[1], f"kube-apiserver: {sorted(apiserver[1])}; webhook: {sorted(ours[1])}; {message}"
    assert judged_offline == apiserver, \
        f"kube-apiserver: {sorted(apiserver[1])}; validate (built-in Job): {sorted(judged_offline[1])}"


@pytest.mark.parametrize("index,case", list(enumerate(CREATES)), ids=[c[0] for c in CREATES])
def test_create_agrees_with_kube_apiserver(hook, index, case):
    case_id, fields = case
    name = f"create-{index}"
    apiserver = verdict(*hook.call("POST", f"{JOBS}?dryRun=All", job(name, fields)), JOB_PREFIX)
    answer = hook.call("POST", f"{JOBSETS}?dryRun=All", jobset(name, fields))
    ours = verdict(*answer, EMBED_PREFIX)
    _record("CREATE", case_id, apiserver, ours, answer[1].get("message"), offline(job(name, fields)))


@pytest.mark.parametrize("index,case", list(enumerate(UPDATES)), ids=[c[0] for c in UPDATES])
def test_update_agrees_with_kube_apiserver(hook, index, case):
    case_id, old, new = case
    name = f"update-{index}"
    seen: list = []
    apiserver = verdict(*_put_over(hook, JOBS, name, job(name, old), new, _job_spec, seen), JOB_PREFIX)
    answer = _put_over(hook, JOBSETS, name, jobset(name, old), new, _embedded_spec)
    _record("UPDATE", case_id, apiserver, verdict(*answer, EMBED_PREFIX), answer[1].get("message"), offline(*seen))
