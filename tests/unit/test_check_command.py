"""`check` (the chart's helm test): its probe is denied in every rollout phase, and it
reads the webhook's answer itself, so only this service's own denial passes."""
import json

import pytest

from tests.unit.helpers import config
from webhook import engine
from webhook.commands import check as check_command

ROLLOUT_PHASES = {
    "defaults": {},
    "warn everywhere": {"enforcement": {"default": "warn"}},
    "audit everywhere, DIS-2 off": {"enforcement": {"default": "audit", "rules": {"DIS-2": "audit"}},
                                    "policies": {"forbidAllWithBasic": False}},
    "a namespace relaxed": {"enforcement": {"namespaces": [{"selector": {"matchLabels": {"team": "ml"}}, "action": "audit"}]}},
}


@pytest.mark.parametrize("phase", list(ROLLOUT_PHASES))
def test_the_probe_is_denied_at_its_field_whatever_the_enforcement(phase):
    obj = check_command.probe_review("ww")["request"]["object"]
    verdict = engine.validate(engine.Request.for_object(obj), config(**ROLLOUT_PHASES[phase]))
    assert not verdict.allowed
    assert check_command.PROBE_FIELD in {str(e.field) for e in verdict.errors}


def test_the_pod_probe_names_no_group_and_is_left_unchanged():
    obj = check_command.pod_review("ww")["request"]["object"]
    verdict = engine.mutate(engine.Request.for_object(obj), config())
    assert verdict.allowed and not verdict.patch


def _answer(review, **response):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "response": {"uid": review["request"]["uid"], **response}}).encode()


DENIED = {"allowed": False, "status": {"code": 422, "details": {"causes": [
    {"field": check_command.PROBE_FIELD, "reason": "FieldValueRequired", "message": "Required value"}]}}}


def test_judge_answer_accepts_only_this_services_denial():
    review = check_command.probe_review("ww")
    assert check_command.judge_answer(review, 200, _answer(review, **DENIED), True) is None
    other = {**DENIED, "status": {"details": {"causes": [{"field": "spec.other"}]}}}
    for status, body, why in (
            (200, _answer(review, allowed=True), "not denied"),
            (200, _answer(review, **other), "not denied"),
            (200, _answer({"request": {"uid": "someone-else"}}, **DENIED), "uid"),
            (500, b'{"error": "x"}', "HTTP 500"),
            (200, b"<html>", "not an AdmissionReview answer"),
            (200, b'{"kind": "AdmissionReview"}', "not an AdmissionReview answer")):
        problem = check_command.judge_answer(review, status, body, True)
        assert problem and why in problem, (why, problem)


def test_judge_answer_of_the_pod_probe():
    review = check_command.pod_review("ww")
    assert check_command.judge_answer(review, 200, _answer(review, allowed=True), False) is None
    assert "not allowed unchanged" in check_command.judge_answer(
        review, 200, _answer(review, allowed=True, patch="W10=", patchType="JSONPatch"), False)
    assert "not allowed unchanged" in check_command.judge_answer(review, 200, _answer(review, allowed=False), False)
