"""The offline CLI on hostile files: each case runs the real `workload-webhook
validate` in a subprocess and must end with a one-line problem (exit 1 or 2),
in bounded time and memory (the child's peak RSS is read from the kernel)."""
import os
import subprocess
import sys
import time

import pytest

from tests import memory
from tests.server.harness import REPO

BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &bomb [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""
MAX_SECONDS = 10          # what each case takes is printed; the bound only catches a hang
MAX_RSS_MIB = 300


def validate(*paths: str) -> tuple[subprocess.CompletedProcess, float, float]:
    started = time.monotonic()
    proc, peak_mib = memory.peak([sys.executable, "-m", "webhook", "validate", "--config", "examples/config.yaml",
                                   "-f", *paths], cwd=REPO, timeout=MAX_SECONDS)
    return proc, time.monotonic() - started, peak_mib


def _bomb_in(field: str) -> str:
    """One document whose judged field is an alias of a 10^8-leaf list (anchors under `x-anchors`)."""
    anchors = "x-anchors:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines())
    if field == "scheduling":
        return ("apiVersion: training.example.com/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: ml}\n"
                + anchors + "spec:\n  replicas: 2\n  scheduling: *bomb\n")
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, labels: {scheduling.k8s.io/pod-group: pg}}\n"
            + anchors + "spec:\n  containers: *bomb\n")


@pytest.mark.parametrize("field", ["scheduling", "containers"])
def test_yaml_alias_bomb_is_refused_quickly(tmp_path, field):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb_in(field))
    proc, elapsed, rss = validate(str(path))
    print(f"\nalias bomb in {field}: exit {proc.returncode} in {elapsed:.2f} s, peak RSS {rss:.0f} MiB")
    assert proc.returncode in (1, 2)
    assert "expands to more than" in proc.stdout + proc.stderr
    assert rss < MAX_RSS_MIB


def test_symlink_to_dev_zero_and_fifo_in_a_directory_are_reported_not_read(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    proc, elapsed, rss = validate(str(tmp_path))
    print(f"\n/dev/zero link and FIFO: exit {proc.returncode} in {elapsed:.2f} s, peak RSS {rss:.0f} MiB")
    out = proc.stdout + proc.stderr
    assert "zero.yaml" in out and "pipe.yaml" in out and out.count("not a regular file") == 2
    assert rss < MAX_RSS_MIB


def test_fifo_given_by_name_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")
    proc, _, _ = validate(str(tmp_path / "pipe.yaml"))
    assert "not a regular file" in proc.stdout + proc.stderr and proc.returncode != 0


def test_five_megabytes_of_documents_load_with_libyaml(tmp_path):
    doc = ("apiVersion: training.example.com/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: ml}\n"
           "spec:\n  replicas: 4\n  scheduling:\n    schedulingPolicy: {gang: {minCount: 4}}\n"
           "  padding: [" + ", ".join(["0123456789"] * 40) + "]\n")
    count = 5 * 1024 * 1024 // len(doc)
    (tmp_path / "many.yaml").write_text("---\n".join([doc] * count))
    proc, elapsed, rss = validate(str(tmp_path / "many.yaml"))
    print(f"\n{count} documents (5 MiB): exit {proc.returncode} in {elapsed:.2f} s, peak RSS {rss:.0f} MiB")
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr[-500:]
    assert proc.stdout.count(": valid") == count
