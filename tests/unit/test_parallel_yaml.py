"""A YAML stream read in parts by forked processes (webhook/manifests/parallel_yaml.py)
gives what one sequential read gives: the same objects and spans in the same
order, the first error in file order at the same line, and positions of
violations in the last part right. The parts are made small here, so the
forked path runs on small inputs and on any number of cores."""
import pytest
import yaml

from webhook import manifests
from webhook import forks
from webhook.manifests import parallel_yaml
from webhook.manifests.yaml_documents import TooLarge, documents


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr(parallel_yaml, "MIN_PART_CHARS", 2_000)
    monkeypatch.setattr(forks, "usable_cores", lambda: 3)


def stream(count: int, newline: str = "\n") -> str:
    docs = []
    for i in range(count):
        docs.append(f"# Source: chart/templates/cm-{i}.yaml\napiVersion: v1\nkind: ConfigMap\n"
                    f"metadata: {{name: c-{i}, namespace: ns-{i % 3}}}\n"
                    f"data:\n  note: \"größe {i}\"\n  list: [{i}, {i + 1}, yes, ~, 1.5]\n  block: |\n    line one\n"
                    "    --- not a document start, it is indented\n")
    return newline.join(("---\n" + d).replace("\n", newline) for d in docs)


def sequential(text):
    return list(documents(text, 10**6))


def test_the_parts_give_the_sequential_objects_and_spans():
    text = stream(120)
    assert len(parallel_yaml.plan(text)) == 3                 # read in three parts
    assert parallel_yaml.read(text, 10**6) == sequential(text)


def test_crlf_lines_are_cut_too_and_keep_their_line_numbers():
    text = stream(120, "\r\n")
    assert parallel_yaml.plan(text) is not None
    assert parallel_yaml.read(text, 10**6) == sequential(text)


@pytest.mark.parametrize("text", [stream(120, "\r"), "%YAML 1.1\n" + stream(120)], ids=["cr-only", "directive"])
def test_what_a_cut_could_break_is_read_in_one_piece(text):
    assert parallel_yaml.plan(text) is None
    assert parallel_yaml.read(text, 10**6) == sequential(text)


@pytest.mark.parametrize("bad", ["kind: [ConfigMap\n", "metadata: {name: a, name: b}\n"], ids=["syntax", "duplicate"])
def test_the_first_error_in_file_order_is_raised_at_its_line(bad):
    text = stream(120)
    last = text.rindex("---\n")
    text = text[:last] + "---\n" + bad + text[last + 4:]
    with pytest.raises(yaml.YAMLError) as whole:
        sequential(text)
    with pytest.raises(yaml.YAMLError) as parts:
        parallel_yaml.read(text, 10**6)
    assert parts.value.problem == whole.value.problem
    assert parts.value.problem_mark.line == whole.value.problem_mark.line > 1000
    assert parts.value.problem_mark.column == whole.value.problem_mark.column


def test_an_alias_bomb_in_a_later_part_is_refused():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    text = stream(120) + "\n---\n" + bomb
    with pytest.raises(TooLarge):
        parallel_yaml.read(text, 5_000)


def test_positions_of_a_violation_in_the_last_part(tmp_path, capsys):
    from webhook.cli import main
    bad = "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec:\n" \
          "  schedulingPolicy:\n    gang: {minCount: 0}\n"
    text = stream(120) + "\n" + bad
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert parallel_yaml.plan(text) is not None
    docs, problems = manifests.load([str(path)])
    assert not problems and len(docs) == 121
    assert main(["validate", "-f", str(path), "--quiet"]) == 1
    line = text.count("\n") + 1 - 1                       # the last line: `    gang: {minCount: 0}`
    assert f"{path}:{line}:12: PodGroup pg: spec.schedulingPolicy.gang.minCount: Required value" \
        in capsys.readouterr().out


def test_what_marshal_cannot_carry_comes_back_pickled():
    text = stream(120) + "\n---\nwhen: !!timestamp 2026-01-01T00:00:00Z\nraw: !!binary aGVsbG8=\ntags: !!set {a, b}\n"
    result = parallel_yaml.read(text, 10**6)
    assert result == sequential(text)
    assert type(result[-1][0]["when"]).__name__ == "datetime" and result[-1][0]["raw"] == b"hello"
