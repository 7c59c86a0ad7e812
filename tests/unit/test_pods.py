"""Pods joining their pod group (POD-1..8), as the mutating webhook does it."""
import jsonpatch
import pytest

from webhook import engine
from webhook.view import ClusterUnavailable, DisabledView, StaticView
from webhook.mutation.patch import apply
from tests.unit.helpers import check, config, pod, podgroup

LABEL = "scheduling.k8s.io/pod-group"
GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
NIC = {"name": "nic", "resourceClaimName": "shared-nic"}
GROUP = podgroup("pg", resourceClaims=[GPU, NIC], workloadRef={"workloadName": "train", "templateName": "workers"})
VIEW = StaticView([GROUP], authoritative=True)


def run(p, cfg=None, view=VIEW, op="CREATE"):
    req = engine.Request(op, "", "v1", "Pod", p, p if op == "UPDATE" else None, "ml")
    return engine.mutate(req, cfg or config(), view)


def result(p, **kw):
    v = run(p, **kw)
    assert v.allowed, v.errors
    return v, apply(p, v.patch or [])


def test_POD_1_label_sets_scheduling_group():
    _, out = result(pod({LABEL: "pg"}))
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "pg"}


def test_POD_1_label_not_a_subdomain_is_denied():
    v = run(pod({LABEL: "PG_1"}))
    assert [(e.type, str(e.field)) for e in v.errors] == [("Invalid", f"metadata.labels[{LABEL}]")]


def test_POD_2_scheduling_group_adds_label():
    _, out = result(pod({"app": "x"}, schedulingGroup={"podGroupName": "pg"}), view=StaticView([podgroup("pg")], True))
    assert out["metadata"]["labels"] == {"app": "x", LABEL: "pg"}


def test_POD_2_creates_missing_labels_map():
    v, out = result(pod(None, schedulingGroup={"podGroupName": "pg"}))
    assert out["metadata"]["labels"] == {LABEL: "pg", "scheduling.k8s.io/workload": "train"}
    assert {"op": "add", "path": "/metadata/labels", "value": out["metadata"]["labels"]} in v.patch


def test_POD_2_long_group_name_cannot_be_a_label_value():
    name = "a" * 70
    v, out = result(pod(None, schedulingGroup={"podGroupName": name}), view=StaticView([], True))
    assert LABEL not in (out["metadata"].get("labels") or {})
    assert any("not a valid label value" in w for w in v.warnings)


def test_POD_3_label_and_field_disagree():
    v = run(pod({LABEL: "a"}, schedulingGroup={"podGroupName": "b"}))
    assert [(e.type, str(e.field)) for e in v.errors] == [("Invalid", "spec.schedulingGroup.podGroupName")]
    assert not check(pod({LABEL: "a"}, schedulingGroup={"podGroupName": "b"})).allowed


def test_POD_3_agreeing_label_and_field_validate():
    assert check(pod({LABEL: "pg"}, schedulingGroup={"podGroupName": "pg"})).allowed


def test_POD_4_claims_injected_in_group_order_after_pods_own():
    own = {"name": "scratch", "resourceClaimTemplateName": "scratch"}
    _, out = result(pod({LABEL: "pg"}, resourceClaims=[own]))
    assert out["spec"]["resourceClaims"] == [own, GPU, NIC]


def test_POD_4_exact_existing_entry_is_kept():
    _, out = result(pod({LABEL: "pg"}, resourceClaims=[NIC]))
    assert out["spec"]["resourceClaims"] == [NIC, GPU]


def test_POD_4_same_name_other_reference_is_denied():
    v = run(pod({LABEL: "pg"}, resourceClaims=[{"name": "gpu", "resourceClaimName": "mine"}]))
    assert [(e.type, str(e.field)) for e in v.errors] == [("Invalid", "spec.resourceClaims[0]")]
    assert "gpus" in v.errors[0].detail


def test_POD_4_claims_to_containers():
    cfg = config(pods={"claimsToContainers": "all"})
    p = pod({LABEL: "pg"}, containers=[{"name": "a"}, {"name": "b", "resources": {"claims": [{"name": "gpu"}]}}],
            initContainers=[{"name": "init"}])
    _, out = result(p, cfg=cfg)
    assert out["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}, {"name": "nic"}]
    assert out["spec"]["containers"][1]["resources"]["claims"] == [{"name": "gpu"}, {"name": "nic"}]
    assert "resources" not in out["spec"]["initContainers"][0]


def test_POD_4_claims_to_containers_off_by_default():
    _, out = result(pod({LABEL: "pg"}))
    assert "resources" not in out["spec"]["containers"][0]


def test_POD_5_missing_group_allowed_with_warning():
    v, out = result(pod({LABEL: "later"}))
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "later"}
    assert "resourceClaims" not in out["spec"]
    assert any("not found" in w and "later" in w for w in v.warnings)


def test_POD_5_missing_group_denied_when_configured():
    v = run(pod({LABEL: "later"}), cfg=config(pods={"onMissingPodGroup": "deny"}))
    assert not v.allowed and "does not exist" in v.errors[0].detail


def test_POD_5_group_being_deleted_is_denied():
    dying = podgroup("pg")
    dying["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    v = run(pod({LABEL: "pg"}), view=StaticView([dying], True))
    assert not v.allowed and "being deleted" in v.errors[0].detail


@pytest.mark.parametrize("mode,allowed", [("allow", True), ("deny", False)])
def test_POD_5_cluster_unreachable_follows_setting(mode, allowed):
    class Down(StaticView):
        authoritative = True

        def podgroup(self, ns, name):
            raise ClusterUnavailable("API server did not answer within 2s")

    v = run(pod({LABEL: "pg"}), cfg=config(pods={"onMissingPodGroup": mode}), view=Down())
    assert v.allowed is allowed
    assert any("did not answer" in t for t in v.warnings + [e.detail for e in v.errors])


def test_POD_5_no_cluster_view_still_sets_membership():
    v, out = result(pod({LABEL: "pg"}), view=DisabledView())
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "pg"} and v.warnings


@pytest.mark.parametrize("p", [
    pod({LABEL: "pg"}),
    pod(None, schedulingGroup={"podGroupName": "pg"}),
    pod({LABEL: "pg", "a/b~c": "x"}, resourceClaims=[NIC], containers=[{"name": "c", "resources": {}}]),
], ids=["by label", "by field", "odd existing label"])
def test_POD_6_idempotent(p):
    cfg = config(pods={"claimsToContainers": "all"})
    _, once = result(p, cfg=cfg)
    again = run(once, cfg=cfg)
    assert again.allowed and again.patch is None


def test_POD_6_patch_only_adds_and_escapes_label_keys():
    cfg = config(pods={"groupLabel": "example.com/group", "workloadLabel": None})
    v, out = result(pod({"keep": "me"}, schedulingGroup={"podGroupName": "pg"}), cfg=cfg)
    assert all(op["op"] == "add" for op in v.patch)
    assert {"op": "add", "path": "/metadata/labels/example.com~1group", "value": "pg"} in v.patch
    assert out["metadata"]["labels"]["keep"] == "me"
    # The patch applies with an independent RFC 6902 implementation too.
    assert jsonpatch.JsonPatch(v.patch).apply(pod({"keep": "me"}, schedulingGroup={"podGroupName": "pg"})) == out


def test_POD_6_never_rewrites_existing_fields():
    p = pod({LABEL: "pg", "scheduling.k8s.io/workload": "other"}, resourceClaims=[NIC], nodeName="n1")
    v, out = result(p)
    assert out["metadata"]["labels"]["scheduling.k8s.io/workload"] == "other"
    assert out["spec"]["nodeName"] == "n1" and out["spec"]["resourceClaims"][0] == NIC


def test_POD_7_update_is_not_mutated():
    v = run(pod({LABEL: "pg"}), op="UPDATE")
    assert v.allowed and v.patch is None


def test_POD_8_workload_label_from_podgroup():
    _, out = result(pod({LABEL: "pg"}))
    assert out["metadata"]["labels"]["scheduling.k8s.io/workload"] == "train"
    _, off = result(pod({LABEL: "pg"}), cfg=config(pods={"workloadLabel": None}))
    assert "scheduling.k8s.io/workload" not in off["metadata"]["labels"]


def test_pod_without_group_is_untouched():
    v = run(pod({"app": "web"}))
    assert v.allowed and v.patch is None and v.warnings == []


@pytest.mark.parametrize("bad", [
    {"metadata": {"labels": {LABEL: 5}}, "spec": {}},
    {"metadata": {"labels": "x"}, "spec": {}},
    {"metadata": {}, "spec": {"schedulingGroup": "pg"}},
    {"metadata": {}, "spec": {"schedulingGroup": {"podGroupName": 1}}},
    {"metadata": {"labels": {LABEL: "pg"}}, "spec": {"resourceClaims": "gpu"}},
    {"metadata": {"labels": {LABEL: "pg"}}, "spec": {"containers": [{"resources": {"claims": "x"}}]}},
    [1, 2, 3],
], ids=["label int", "labels str", "group str", "name int", "claims str", "container claims str", "list"])
def test_malformed_pods_are_denied_not_crashed(bad):
    v = run(bad, cfg=config(pods={"claimsToContainers": "all"}))
    assert not v.allowed and all(e.type == "Invalid" for e in v.errors)


def test_POD_6_idempotent_with_a_nameless_group_claim():
    """A PodGroup claim with an empty name cannot be matched again: it is not
    injected, so a second call adds nothing (it used to append it every time)."""
    group = podgroup("pg", resourceClaims=[{"name": "", "resourceClaimName": "x"}, GPU])
    view = StaticView([group], authoritative=True)
    _, once = result(pod({LABEL: "pg"}), view=view)
    assert once["spec"]["resourceClaims"] == [GPU]
    again = run(once, view=view)
    assert again.allowed and again.patch is None


def test_POD_4_a_pod_entry_taking_the_group_template_under_another_name_is_warned():
    """It would get a device of its own from the template, silently: the webhook says so."""
    group = podgroup("pg", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}])
    p = pod({LABEL: "pg"}, resourceClaims=[{"name": "mine", "resourceClaimTemplateName": "gpu-tpl"}])
    v = run(p, view=StaticView([group], authoritative=True))
    assert v.allowed
    assert any("spec.resourceClaims[0]: 'mine' takes its own claim from template 'gpu-tpl'" in w and
               "a device of its own" in w for w in v.warnings), v.warnings
    same = pod({LABEL: "pg"}, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}])
    assert not any("device of its own" in w for w in run(same, view=StaticView([group], authoritative=True)).warnings)
