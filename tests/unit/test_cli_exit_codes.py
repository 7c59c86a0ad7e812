"""The exit codes docs/cli.md states, command by command: 0 fine, 1 the answer is no
(a violation or denial, the object asked about not there), 2 a usage, config, input
or cluster error: an input that cannot be read or parsed is 2 wherever it is given,
as a path that is not there is. A syntax error is named `file:line:column:` in the
text output as the other formats locate it; the --profile error lists every name."""
from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from tests.server.harness import REPO
from webhook import profiles
from webhook.cli import main

BROKEN = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: [a, b\n"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    return path


def test_a_yaml_syntax_error_is_file_line_column_in_the_text_output(capsys, broken):
    code, out, err = run(capsys, "validate", "-f", str(broken))
    [line] = out.splitlines()
    m = re.fullmatch(rf"{re.escape(str(broken))}:(\d+):(\d+): error: not valid YAML: (.+)", line)
    assert m, line
    assert "line " not in m[3]                      # said once, where compilers say it
    # The other formats put the problem at the same line and column.
    code_json, out_json, _ = run(capsys, "validate", "-f", str(broken), "-o", "json")
    [record] = json.loads(out_json)
    assert (record["errors"][0]["line"], record["errors"][0]["column"]) == (int(m[1]), int(m[2]))
    assert record["errors"][0]["detail"] == f"not valid YAML: {m[3]}"
    _, out_github, _ = run(capsys, "validate", "-f", str(broken), "-o", "github")
    assert f",line={m[1]},col={m[2]},title=file not read::not valid YAML: {m[3]}" in out_github
    assert code == code_json == 2


def test_a_json_syntax_error_too(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"apiVersion": "v1",\n  "kind": }')
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2 and out.startswith(f"{path}:2:11: error: not valid JSON: ")


def test_an_unparsable_file_exits_2_and_says_so_even_beside_violations(capsys, broken, tmp_path):
    bad_pg = tmp_path / "pg.yaml"
    bad_pg.write_text(yaml.safe_dump({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                      "metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"gang": {}}}}))
    code, out, err = run(capsys, "validate", "-f", str(bad_pg))
    assert code == 1 and "Required value" in out            # a violation alone: 1
    code, out, err = run(capsys, "validate", "-f", str(bad_pg), str(broken))
    assert code == 2 and "Required value" in out             # the rest is still judged and reported
    assert err.splitlines()[1] == "exit 2 because of 1 file(s) not read, 1 invalid"
    code, out, _ = run(capsys, "validate", "-f", str(bad_pg), str(broken), "-o", "sarif")
    assert json.loads(out)["runs"][0]["invocations"][0]["exitCode"] == code == 2


def test_an_unparsable_old_file_exits_2(capsys, broken):
    code, out, _ = run(capsys, "validate", "-f", os.path.join(REPO, "examples", "valid", "podgroup.yaml"),
                       "--old", str(broken))
    assert code == 2 and f"{broken}:6:1: error: not valid YAML: " in out


def test_a_file_that_is_not_a_regular_file_exits_2(capsys, tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    code, out, _ = run(capsys, "validate", "-f", str(fifo))
    assert code == 2 and "not a regular file" in out


def test_a_missing_path_and_an_input_without_objects_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "validate", "-f", str(tmp_path / "nope.yaml"))
    assert code == 2 and "no such file" in err
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    code, _, err = run(capsys, "validate", "-f", str(empty))
    assert code == 2 and "no objects" in err


def test_mutate_of_an_unparsable_file_exits_2_and_a_denial_1(capsys, broken, tmp_path):
    code, _, err = run(capsys, "mutate", "-f", str(broken))
    assert code == 2 and err.startswith(f"{broken}:6:1: error: not valid YAML: ")
    code, _, err = run(capsys, "mutate", "-f", os.path.join(REPO, "examples", "pods", "worker.yaml"),
                       "--context", str(broken))
    assert code == 2
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "namespace": "ml", "labels": {"scheduling.k8s.io/pod-group": "Not_A_Name"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}))
    code, _, err = run(capsys, "mutate", "-f", str(pod))
    assert code == 1 and "POD-1" in err


def test_certs_inspect_of_a_missing_or_foreign_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "certs", "inspect", str(tmp_path / "nope.crt"))
    assert code == 2 and err == f"error: {tmp_path / 'nope.crt'}: No such file or directory\n"
    key = tmp_path / "x.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    code, _, err = run(capsys, "certs", "inspect", str(key))
    assert code == 2 and len(err.splitlines()) == 1


def test_explain_of_a_kind_it_does_not_read_is_a_usage_error(capsys, tmp_path):
    # A cluster that is never asked: the kind is refused before any request (127.0.0.1, nothing listens).
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    code, _, err = run(capsys, "explain", "trainjob/llama", "--kubeconfig", str(kubeconfig))
    assert code == 2 and "unknown kind 'trainjob'" in err


def test_explain_keeps_1_for_an_object_that_is_not_there():
    """The answer "not there" (kubectl get's NotFound) is 1, the documented exception to 2."""
    from webhook.commands import explain as command
    from webhook.explain import reader, tree
    assert command.EXIT_NOT_FOUND == 1 and issubclass(reader.UnknownKind, reader.ReadError)
    assert not issubclass(tree.NotFound, reader.ReadError)
    with open(os.path.join(REPO, "docs", "cli.md"), encoding="utf-8") as f:
        doc = f.read()
    assert "the object asked about not there (`explain`)" in doc


def test_the_profile_error_lists_every_name_from_the_profiles_data(capsys):
    names = sorted({*profiles.NAMES, *profiles.aliases()})
    assert "lws" in names and "leaderworkerset" in names
    assert set(profiles.NAMES) == {f[:-5] for f in os.listdir(os.path.dirname(profiles.__file__))
                                   if f.endswith(".yaml")}
    code, _, err = run(capsys, "validate", "-f", os.path.join(REPO, "examples", "valid"), "--profile", "kueue")
    assert code == 2
    assert 'Unsupported value: "kueue": supported values: ' + ", ".join(f'"{n}"' for n in names) in err
    # Each short name selects its profile, in a config's `profiles` as with --profile.
    for alias, name in profiles.aliases().items():
        code, _, err = run(capsys, "validate", "-f", os.path.join(REPO, "examples", "valid"), "--profile", alias)
        assert code == 0, err
