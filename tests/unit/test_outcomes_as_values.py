"""Outcomes are values: no code path decides by the text of a message.

Every message is reworded where it is built: each FieldError's detail is reversed and
marked (FieldError.__post_init__; an error copied by dataclasses.replace keeps the one
rewording), and each warning's message and text too (FieldWarning). Over a corpus (the
examples, the upstream cases of data/upstream_cases.yaml, Jobs and CronJobs whose update
changes the variant, pod templates and JobSets updated over stored violations, bridged
Pods whose mirror is missing, being deleted or cannot be looked up, in either
pods.onMissingPodGroup) the verdicts must not move: allowed or not, each error's and
warning's type, path, rule and mirror id, where enforcement put it, the patch, and
`validate`'s exit code. Reversing breaks every substring and every prefix, so a rule
that read a message (`"does not exist" in e.detail`, `detail.startswith(...)`) would
change its answer.

How it was checked to fail before the outcomes were values: this module run against the
previous code (PYTHONPATH set to a checkout of the commit before, where bridge/pods.py
plan_join tested `"does not exist" in e.detail` and rules/job.py dropped the CronJob's
variant error by `detail.startswith(VARIANT_FROZEN)`) fails
test_no_verdict_moves_when_every_message_is_reworded on the bridged Pods with a missing
mirror and pods.onMissingPodGroup: deny (POD-5 instead of BRG-2) and on the CronJob whose
update switches basic to gang (denied instead of admitted)."""
from __future__ import annotations

import contextlib
import copy
import io
import os

import pytest

from webhook import cli, config as config_mod, engine, field, manifests
from webhook.view import ClusterUnavailable, DisabledView, StaticView
from tests.unit import test_job_rules as jobs, test_operator_rules as operators, test_upstream_cases as upstream
from tests.unit.helpers import config, pod, podgroup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
MARK = "\u2063"                       # invisible separator: marks a reworded text (never in a rule's words)
COSCHED = "scheduling.x-k8s.io/pod-group"


def reword(text: str) -> str:
    return text if not text or text.startswith(MARK) else MARK + text[::-1]


@contextlib.contextmanager
def reworded(monkeypatch):
    """Every message reworded where it is built, for as long as the block runs."""
    with monkeypatch.context() as m:
        post_init = field.FieldError.__post_init__

        def rewording_post_init(self):
            post_init(self)
            object.__setattr__(self, "detail", reword(self.detail))
        m.setattr(field.FieldError, "__post_init__", rewording_post_init)
        warning_class = getattr(field, "FieldWarning", None)      # absent before warnings were values
        if warning_class is not None:
            new = warning_class.__new__

            def rewording_new(cls, path, message, rule=None, text=None):
                return new(cls, path, reword(message), rule, None if text is None else reword(text))
            m.setattr(warning_class, "__new__", staticmethod(rewording_new))
        yield


class Unavailable:
    """A live cluster's view that cannot answer."""
    authoritative, disabled, synced = True, False, {}

    def podgroup(self, namespace, name):
        raise ClusterUnavailable("API server did not answer within 2s")

    def workload(self, namespace, name):
        raise ClusterUnavailable("API server did not answer within 2s")

    def namespace_labels(self, name):
        return None


def _examples() -> list:
    cfg = config_mod.load(os.path.join(EXAMPLES, "config.yaml"))
    docs, _ = manifests.load([os.path.join(EXAMPLES, d) for d in ("valid", "invalid", "pods")])
    view = StaticView([d.obj for d in docs], authoritative=True)
    out = []
    for d in docs:
        req = engine.Request.for_object(d.obj)
        out += [("validate", req, cfg, view), ("mutate", req, cfg, view),
                ("validate", engine.Request.for_object(copy.deepcopy(d.obj), d.obj), cfg, view)]
    return out


def _upstream() -> list:
    return [("validate", upstream._request(c), upstream._config(c), None) for c in upstream.CASES]


def _jobs() -> list:
    basic, gang = {"schedulingPolicy": {"basic": {}}}, jobs.GANG(1)
    pairs = [(jobs.cronjob(gang), jobs.cronjob(basic)), (jobs.cronjob(basic), jobs.cronjob(gang)),
             (jobs.job(gang), jobs.job(basic)), (jobs.job(basic), jobs.job(gang)),
             (jobs.cronjob({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}}), jobs.cronjob(gang)),
             (jobs.cronjob({**basic, "disruptionMode": {"single": {}}}), jobs.cronjob(basic)),
             (jobs.cronjob(jobs.GANG(3), parallelism=2), None), (jobs.job(basic), None)]
    return [("validate", engine.Request.for_object(new, old), cfg, None)
            for new, old in pairs for cfg in (jobs.ON, config_mod.from_dict({}))]


def _templates() -> list:
    def deployment(labels):
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
                "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": []}}}}
    bad, other_bad, good = ({"scheduling.k8s.io/pod-group": v} for v in ("Bad_Name", "Other_Bad", "fine"))
    pairs = [(bad, bad), (bad, good), (other_bad, bad), (good, bad), (bad, None)]
    return [("validate", engine.Request.for_object(deployment(new), old and deployment(old)), config_mod.from_dict({}),
             None) for new, old in pairs]


def _jobsets() -> list:
    cfg = operators.CFG
    objects = [operators.js(), operators.js(scheduling={"schedulingPolicy": {"gang": {"minCount": 9}}}),
               operators.js(jobs=[operators.job("a", prio="high"), operators.job("b", prio="low")]),
               operators.js(jobs=[operators.job("a", group="pg"), operators.job("b")]),
               operators.js(order="InOrder", jobs=[operators.job("a"), operators.job("b", depends="a")])]
    out = [("validate", engine.Request.for_object(o), cfg, None) for o in objects]
    out += [("validate", engine.Request.for_object(copy.deepcopy(o), old), cfg, None)
            for o in objects for old in objects]
    return out


def _bridged() -> list:
    dying = podgroup("train")
    dying["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    views = [StaticView([], authoritative=True), StaticView([]), DisabledView(), Unavailable(),
             StaticView([dying], authoritative=True), StaticView([podgroup("train")], authoritative=True),
             StaticView([{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": "train", "namespace": "ml"}, "spec": "malformed"}], True)]
    pods = [pod({COSCHED: "train"}), pod({COSCHED: "train", "scheduling.k8s.io/pod-group": "train"}),
            pod({"scheduling.k8s.io/pod-group": "train"}), pod({COSCHED: "other", "scheduling.k8s.io/pod-group": "train"})]
    cfgs = [config(bridge={"coscheduling": True, "volcano": True}, pods={"onMissingPodGroup": missing},
                   server={"lookupTimeoutSeconds": 0.1}, **extra)
            for missing in ("allow", "deny") for extra in ({}, {"enforcement": {"rules": {"BRG-2": "warn"}}})]
    cfgs.append(config(pods={"onMissingPodGroup": "deny"}))
    return [("mutate", engine.Request("CREATE", "", "v1", "Pod", copy.deepcopy(p), None, "ml"), cfg, view)
            for p in pods for cfg in cfgs for view in views]


CORPUS = {"examples": _examples, "upstream": _upstream, "jobs": _jobs, "templates": _templates,
          "jobsets": _jobsets, "bridged": _bridged}


def _signature(verdict) -> tuple:
    """A verdict without its words."""
    def errors(found):
        return tuple((e.type, str(e.field), e.rule, e.mirror) for e in found)
    warnings = tuple((str(w.path), w.rule) if hasattr(w, "path") else w for w in verdict.warnings)
    return verdict.allowed, verdict.checked, errors(verdict.errors), errors(verdict.warned), \
        errors(verdict.audits), warnings, verdict.patch


def _judge(case) -> tuple[tuple, list[str]]:
    how, req, cfg, view = case
    verdict = (engine.validate if how == "validate" else engine.mutate)(copy.deepcopy(req), cfg, view, scope="cli")
    texts = [str(e) for e in (*verdict.errors, *verdict.warned, *verdict.audits)] + [str(w) for w in verdict.warnings]
    return _signature(verdict), texts


@pytest.mark.parametrize("corpus", list(CORPUS))
def test_no_verdict_moves_when_every_message_is_reworded(corpus, monkeypatch):
    monkeypatch.setattr("webhook.mutation.foreign_join.time.sleep", lambda s: None)     # a missing mirror's wait
    cases = CORPUS[corpus]()
    plain = [_judge(c) for c in cases]
    with reworded(monkeypatch):
        again = [_judge(c) for c in cases]
    moved = [(i, p[0], a[0]) for i, (p, a) in enumerate(zip(plain, again)) if p[0] != a[0]]
    assert not moved, f"{len(moved)} of {len(cases)} verdicts moved, first: {moved[0]}"
    said = [t for _, texts in plain for t in texts]
    assert said, "the corpus must have something to say"
    # The rewording took: what was said is said otherwise (the proof is not vacuous).
    assert any(MARK in t for _, a in again for t in a) and not any(MARK in t for t in said)


def _validate_exit(paths: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(["validate", "--config", os.path.join(EXAMPLES, "config.yaml"), "-f", *paths])


@pytest.mark.parametrize("where", ["valid", "invalid", "pods"])
def test_validate_exits_the_same_when_every_message_is_reworded(where, monkeypatch):
    paths = [os.path.join(EXAMPLES, where)]
    plain = _validate_exit(paths)
    with reworded(monkeypatch):
        assert _validate_exit(paths) == plain
    assert plain == (1 if where == "invalid" else 0)


def test_the_lookup_says_its_outcome_as_a_value():
    """The Join carries what the lookup found; the bridge's BRG-2 follows from it alone."""
    from webhook.mutation import foreign_join, lookup, pods as mutation
    cfg = config(pods={"onMissingPodGroup": "deny"}, bridge={"coscheduling": True})
    p = pod({COSCHED: "train"})
    cases = [(StaticView([], True), lookup.Outcome.MISSING), (DisabledView(), lookup.Outcome.NO_VIEW),
             (Unavailable(), lookup.Outcome.UNAVAILABLE), (StaticView([podgroup("train")], True), lookup.Outcome.FOUND)]
    for view, outcome in cases:
        join = mutation.plan_join(p, "train", "ml", cfg, view)
        assert join.outcome is outcome
        bridged = foreign_join.plan_join(p, "train", "ml", cfg, view, mutation.plan_join)
        assert [e.rule for e in bridged.errors] == (["BRG-2"] if outcome.missing else
                                                    ["POD-5"] if outcome is lookup.Outcome.UNAVAILABLE else [])


def test_the_bridge_looks_the_mirror_up_once_on_the_deny_path():
    from tests.unit.test_bridge_pods import Appearing, run
    view = Appearing()
    view.lookups = 2                      # the mirror is there at the next lookup
    v = run(pod({COSCHED: "train"}), view=view, pods={"onMissingPodGroup": "deny"})
    assert v.allowed and view.lookups == 3


def test_one_identity_for_every_ratchet():
    """Equal errors (FieldError's own ==: type, field, value, detail, rule) have one identity,
    whatever their value holds; a different value, detail or rule is another error."""
    a = field.invalid(field.Path("spec", "x"), {"b": [1, {"c": None}]}, "bad")
    assert a.identity == field.invalid(field.Path("spec", "x"), {"b": [1, {"c": None}]}, "bad").identity
    assert a.identity == field.FieldError("Invalid", a.field, a.value, "bad", mirror="POL-1").identity
    for other in (field.invalid(a.field, {"b": [2]}, "bad"), field.invalid(a.field, a.value, "worse"),
                  field.by_rule([a], "TGT-4")[0], field.invalid(field.Path("spec", "y"), a.value, "bad"),
                  field.invalid(a.field, 1.0, "bad"), field.invalid(a.field, True, "bad")):
        assert other.identity != a.identity
    assert field.invalid(a.field, 1, "bad").identity != field.invalid(a.field, "1", "bad").identity
    hash(field.invalid(a.field, {1, 2}, "bad").identity)        # never raises


def test_a_template_ratchets_an_error_only_when_it_is_the_same_error():
    """The pod template's ratchet uses the one identity: a stored bad label ratchets, a changed bad label is
    the update's doing (its value is another), as the other ratchets (rules/checks.py) always judged."""
    cases = {c[1].object["spec"]["template"]["metadata"]["labels"]["scheduling.k8s.io/pod-group"] +
             " <- " + str(c[1].old and c[1].old["spec"]["template"]["metadata"]["labels"]["scheduling.k8s.io/pod-group"]):
             engine.validate(c[1], c[2]) for c in _templates()}
    assert cases["Bad_Name <- Bad_Name"].allowed and cases["fine <- Bad_Name"].allowed
    assert [e.rule for e in cases["Other_Bad <- Bad_Name"].errors] == ["POD-1"]
    assert [e.rule for e in cases["Bad_Name <- fine"].errors] == ["POD-1"] == [e.rule for e in cases["Bad_Name <- None"].errors]
