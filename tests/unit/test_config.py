"""The configuration file (docs/configuration.md): loading, defaults, every problem at once."""
import pytest

from webhook import config as cfgmod
from webhook.paths import FieldPath


def load_text(tmp_path, text):
    p = tmp_path / "config.yaml"
    p.write_text(text)
    return cfgmod.load(p)


def problems(tmp_path, text):
    with pytest.raises(cfgmod.ConfigError) as exc:
        load_text(tmp_path, text)
    return exc.value.problems


def test_defaults_without_a_file():
    c = cfgmod.load(None)
    assert c.forbidAllWithBasic and c.checkPodGroupAgainstWorkload and c.minCountWithinSize
    assert c.groupLabel == "scheduling.k8s.io/pod-group" and c.workloadLabel == "scheduling.k8s.io/workload"
    assert c.onMissingPodGroup == "allow" and c.claimsToContainers == "none" and c.targets == ()
    assert c.server.maxBodyBytes == 7 * 1024 * 1024 and c.server.lookupTimeoutSeconds == 2.0


def test_example_config_loads():
    c = cfgmod.load("examples/config.yaml")
    assert [t.kind for t in c.targets] == ["TrainJob", "GroupJob", "JobSet", "LeaderWorkerSet"]
    assert c.targets[1].groups[0].size.path == FieldPath.parse("spec.replicatedJobs[*].replicas")
    assert c.gate("CompositePodGroup") and c.gate("GenericWorkload")


def test_empty_file_is_defaults(tmp_path):
    assert load_text(tmp_path, "") == cfgmod.Config()


def test_every_problem_is_listed_with_its_path(tmp_path):
    found = problems(tmp_path, """
featureGates: {CompositePodGroup: yes-please, NoSuchGate: true}
pods: {onMissingPodGroup: maybe, groupLabel: "Bad Label"}
limits: {maxMinCount: 0}
targets:
  - group: x.example.com
    kind: trainJob
    groups: [{schedulingPolicy: "spec..policy"}]
  - kind: Foo
""")
    text = "\n".join(found)
    for where in ("featureGates.CompositePodGroup", "featureGates.NoSuchGate", "pods.onMissingPodGroup",
                  "limits.maxMinCount", "targets[0].kind", "targets[0].groups[0].schedulingPolicy", "targets[1].group"):
        assert where in text, (where, text)
    assert "jsonschema" not in text and "is not valid under" not in text


def test_semantic_problems_after_the_schema(tmp_path):
    found = problems(tmp_path, """
pods: {groupLabel: "a/b/c"}
limits: {allowedTopologyKeys: ["-bad-"]}
targets:
  - group: x.example.com
    kind: A
    groups: [{schedulingPolicy: "spec.jobs[*].policy", size: "spec.other[*].n"}]
    composite: {schedulingPolicy: "spec.items[*].p", children: spec.items}
  - group: x.example.com
    kind: A
    groups: [{schedulingPolicy: spec.p}]
""")
    text = "\n".join(found)
    assert "pods.groupLabel" in text and "limits.allowedTopologyKeys[0]" in text
    assert "targets[0].groups[0].size" in text and "targets[0].composite.schedulingPolicy" in text
    assert "configured twice" in text


def test_a_group_entry_fans_out_once(tmp_path):
    found = problems(tmp_path, """
targets:
  - group: x.example.com
    kind: A
    groups: [{schedulingPolicy: "spec.jobs[*].policy", disruptionMode: spec.disruptionMode}]
""")
    assert any("targets[0].groups[0].disruptionMode" in p and "fan out" in p for p in found)


def test_unreadable_and_broken_files(tmp_path):
    with pytest.raises(cfgmod.ConfigError, match="cannot read"):
        cfgmod.load(tmp_path / "missing.yaml")
    assert "line 1" in problems(tmp_path, "a: [1, 2")[0]


def test_cli_exits_2_on_bad_config(tmp_path, capsys):
    from webhook.cli import main
    bad = tmp_path / "c.yaml"
    bad.write_text("pods: {onMissingPodGroup: maybe}\n")
    assert main(["validate", "-f", "examples/valid", "--config", str(bad)]) == 2
    assert "pods.onMissingPodGroup" in capsys.readouterr().err


@pytest.mark.parametrize("text,ok", [
    ("spec.scheduling.schedulingPolicy", True), ("spec.jobs[*].scheduling", True), ("a", True),
    ("spec..x", False), ("spec.jobs[0]", False), (".spec", False), ("spec.jobs[*]x", False), ("", False),
])
def test_field_path_syntax(text, ok):
    if ok:
        assert str(FieldPath.parse(text)) == text
    else:
        with pytest.raises(ValueError):
            FieldPath.parse(text)
