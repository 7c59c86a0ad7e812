"""`audit`'s bridge section: which jobs still depend on the bridge (their controllers
create Coscheduling or Volcano PodGroups), mirrored or not."""
from webhook import config as config_mod
from webhook.audit import bridge
from webhook.foreign.dialects import COSCHEDULING, VOLCANO
from webhook.foreign.mirror import mirror_for


def foreign(d, name, owner=None, phase=None, ns="ml"):
    meta = {"name": name, "namespace": ns, "uid": f"u-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": owner[0], "name": owner[1],
                                    "uid": "j", "controller": True}]
    return {"apiVersion": d.api_version, "kind": "PodGroup", "metadata": meta, "spec": {"minMember": 2},
            **({"status": {"phase": phase}} if phase else {})}


def test_each_foreign_podgroup_is_a_job_that_depends_on_the_bridge():
    cos = foreign(COSCHEDULING, "train", ("PyTorchJob", "train"), "Running")
    vol = foreign(VOLCANO, "pi", ("SparkApplication", "pi"))
    settings = config_mod.from_dict({"bridge": {"coscheduling": True}}).bridge
    deps = bridge.dependents({"coscheduling": [cos], "volcano": [vol]}, [mirror_for(COSCHEDULING, cos)], settings)
    assert [(x.dialect, x.name, x.owner, x.mirrored, x.phase, x.bridged) for x in deps] == [
        ("volcano", "pi", "SparkApplication/pi", False, None, False),
        ("coscheduling", "train", "PyTorchJob/train", True, "Running", True)]
    text = "\n".join(bridge.lines(deps, True))
    assert "not mirrored: bridge.volcano is off: waits for a scheduler" in text
    assert "mirrored, phase Running" in text
    assert "bridge: 2 job(s) still depend on it (2 foreign PodGroup(s))" in text
    assert bridge.as_json(deps, True)["jobs"] == 2


def test_a_mirror_of_an_earlier_object_is_not_this_ones():
    cos = foreign(COSCHEDULING, "train")
    old = mirror_for(COSCHEDULING, {**cos, "metadata": {**cos["metadata"], "uid": "earlier"}})
    settings = config_mod.from_dict({"bridge": {"coscheduling": True}}).bridge
    assert [x.mirrored for x in bridge.dependents({"coscheduling": [cos]}, [old], settings)] == [False]


def test_no_dependents_says_the_bridge_can_go_and_no_foreign_api_says_nothing():
    assert bridge.lines([], True) == ["bridge: no job depends on it (no Coscheduling or Volcano PodGroup): "
                                      "it can be switched off"]
    assert bridge.lines([], False) == []
