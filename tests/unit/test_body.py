"""The body collector (webhook/server/body.py) and the WSGI call
(webhook/server/wsgi_call.py): pure functions, no server."""
from webhook.server import body, wsgi_call


def test_a_body_within_the_limit_is_returned_whole():
    b = body.Body(limit=10, declared=None)
    assert b.feed(b"abc") and b.feed(b"defg")
    assert b.result() == b"abcdefg"


def test_a_body_over_the_limit_is_dropped_and_read_up_to_the_drain_budget():
    b = body.Body(limit=10, declared=None)
    assert b.feed(b"x" * 11)
    assert b.parts == []                  # nothing kept past the limit
    assert b.feed(b"x" * 29)              # 40 bytes: the budget is 4 x 10
    assert not b.feed(b"x")               # one more: stop reading
    assert b.over and b.parts == []


def test_a_declared_length_over_the_limit_is_too_large_from_the_start():
    b = body.Body(limit=10, declared=11)
    assert b.over and b.feed(b"x" * 5)
    assert b.parts == []


def test_wsgi_call_builds_the_environ_and_collects_the_answer():
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response("201 Created", [("Content-Type", "text/plain"), ("X-A", "1")])
        return [b"he", b"llo", environ["wsgi.input"].read()]

    status, headers, data = wsgi_call.call(app, "POST", "/p", "a=1",
                                           [(b"Content-Type", b"text/plain"), (b"X-Two", b"a"), (b"X-Two", b"b"),
                                            (b"Content-Length", b"3")], b"!!!", 8443)
    assert (status, data) == ("201 Created", b"hello!!!")
    assert ("X-A", "1") in headers
    assert seen["PATH_INFO"] == "/p" and seen["QUERY_STRING"] == "a=1" and seen["SERVER_PORT"] == "8443"
    assert seen["CONTENT_TYPE"] == "text/plain" and seen["CONTENT_LENGTH"] == "3"
    assert seen["HTTP_X_TWO"] == "a,b" and seen["wsgi.url_scheme"] == "https"
