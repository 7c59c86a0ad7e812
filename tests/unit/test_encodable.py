"""No input breaks an answer: a lone surrogate escape (`"\\udfff"`, valid JSON)
copied into a message or a patch is encoded, not a 500; a log line stays
bounded as a whole, however many bounded fields it has."""
import json
import logging

from webhook import engine
from webhook.admission import review
from webhook.server.logs import MAX_LINE_CHARS, JsonFormatter
from tests.unit.helpers import config, trainjob

LONE = "\udfff"


def test_a_denial_naming_a_lone_surrogate_is_encoded():
    obj = trainjob({"schedulingPolicy": {"gang": {"minCount": LONE}}})
    verdict = engine.validate(engine.Request.for_object(obj), config())
    assert not verdict.allowed
    body = review.encode(review.respond("u", verdict))
    answer = json.loads(body)
    assert answer["response"]["allowed"] is False and "\\udfff" in body.decode()


def test_a_patch_with_a_lone_surrogate_keeps_it_escaped():
    import base64
    from webhook.verdict import Verdict
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"k": "a" + LONE}}]
    answer = json.loads(review.encode(review.respond("u", Verdict(patch=ops))))
    assert json.loads(base64.b64decode(answer["response"]["patch"])) == ops


def test_a_log_line_is_bounded_as_a_whole():
    record = logging.LogRecord("workload_webhook.server", logging.INFO, "", 0, "denied " + "m" * 9000, None, None)
    record.errors = ["e" * 256] * 5
    record.uid = "u" * 256
    record.object = "o" * 256
    line = JsonFormatter().format(record)
    assert len(line) <= MAX_LINE_CHARS
    parsed = json.loads(line)
    assert parsed["truncated"] is True and parsed["uid"] == "u" * 256
