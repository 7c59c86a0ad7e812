"""Many objects judged on several cores (webhook/validate/parallel_judging.py,
webhook/forks.py) give what one process gives: the same report, byte for byte,
in every output format, with references across parts (a PodGroup and the
Workload it names judged in different children), --old, and objects that are
skipped, unrelated or not objects at all. The parts are made small here, so
the forked path runs on small inputs."""
import json
import os
import pathlib

import pytest

from webhook import forks
from webhook.cli import main
from webhook.validate import parallel_judging

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
# A PodGroup whose template disagrees with the Workload (PG-2 needs the Workload, in another part).
MISMATCH = """apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: llama-finetune-workers-1, namespace: ml}
spec:
  workloadRef: {workloadName: llama-finetune, templateName: workers}
  schedulingPolicy:
    basic: {}
"""
ODD = ["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "metadata: {name: no-kind}\n", "- just\n- a list\n",
       "apiVersion: training.example.com/v9\nkind: TrainJob\nmetadata: {name: future}\n",
       # an unknown field: its error carries no value (field.OMIT), which must stay so when sent back
       "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: ml}\n"
       "spec: {schedulingPolicy: {basic: {}}, bogus: 1}\n"]


def stream(tmp_path) -> pathlib.Path:
    docs = [p.read_text() for d in ("valid", "invalid") for p in sorted((EXAMPLES / d).glob("*.yaml"))]
    parts = [*docs, MISMATCH, *ODD] * 3
    path = tmp_path / "all.yaml"
    path.write_text("\n---\n".join(parts))
    return path


def encode(value) -> bytes:
    return json.dumps(value).encode()


def report(capsys, argv) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


def olds(tmp_path) -> pathlib.Path:
    """The valid examples as stored objects: those are judged as updates, the rest as creates."""
    path = tmp_path / "old.yaml"
    path.write_text("\n---\n".join(p.read_text() for p in sorted((EXAMPLES / "valid").glob("*.yaml"))))
    return path


@pytest.mark.parametrize("output,update", [("json", False), ("text", False), ("sarif", False), ("junit", False),
                                           ("github", False), ("json", True), ("text", True)])
def test_parallel_report_is_the_sequential_one(tmp_path, capsys, monkeypatch, output, update):
    path = stream(tmp_path)
    argv = ["validate", "--config", str(EXAMPLES / "config.yaml"), "-f", str(path), "-o", output]
    argv += ["--old", str(olds(tmp_path))] if update else []
    monkeypatch.setattr(parallel_judging, "MIN_PER_PART", 10**9)
    sequential = report(capsys, argv)
    monkeypatch.setattr(parallel_judging, "MIN_PER_PART", 2)
    monkeypatch.setattr(forks, "usable_cores", lambda: 3)
    assert parallel_judging.parts_for(len(path.read_text().split("\n---\n"))) == 3
    parallel = report(capsys, argv)
    assert parallel == sequential
    assert sequential[0] == 1                          # the invalid examples fail the run
    if output == "text":                               # judged against the Workload in another part
        assert "PodGroup ml/llama-finetune-workers-1: spec.schedulingPolicy: Invalid value" in sequential[1]
        assert "(PG-2)" in sequential[1]
        assert 'unknown field "spec.bogus"' in sequential[1]


def test_a_failing_child_has_its_part_done_here():
    parent = os.getpid()

    def work(k):
        if os.getpid() != parent:
            raise MemoryError("as if the child ran out")
        return [k, os.getpid()]

    results = forks.run_parts(work, 3, encode, json.loads)
    assert results == [[0, parent], [1, parent], [2, parent]]


def test_a_child_that_dies_has_its_part_done_here():
    parent = os.getpid()

    def work(k):
        if os.getpid() != parent:
            os._exit(9)
        return k

    assert forks.run_parts(work, 2, encode, json.loads) == [0, 1]


def test_children_send_their_parts_back():
    parent = os.getpid()
    results = forks.run_parts(lambda k: [k, os.getpid() != parent], 3, encode, json.loads)
    assert results == [[0, False], [1, True], [2, True]]


def test_what_raises_everywhere_raises_here():
    def work(k):
        raise ValueError(f"part {k}")

    with pytest.raises(ValueError, match="part 0"):
        forks.run_parts(work, 2, encode, json.loads)
