"""An engine that raises must fail closed with InternalError (HTTP 200, code
500 in the review), a log line and the internal-errors metric: the real
server, with the fault injected into its engine through a sitecustomize
module on PYTHONPATH (no test hook in the product)."""
import json
import os

from tests.server.harness import REPO, Server, admission_request
from tests.unit.helpers import podgroup

INJECT = '''
import webhook.engine as engine
_validate = engine.validate
def validate(req, cfg, view=None):
    if isinstance(req.object, dict) and (req.object.get("metadata") or {}).get("name") == "explode":
        raise RuntimeError("injected engine fault")
    return _validate(req, cfg, view)
engine.validate = validate
'''


def test_ADM_6_engine_exception_is_an_internal_error_not_a_verdict(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INJECT)
    env = {"PYTHONPATH": os.pathsep.join([str(site), REPO, os.environ.get("PYTHONPATH", "")])}
    with Server(str(tmp_path), extra=["--cluster", "disabled"], env=env) as server:
        fine = server.review("/validate", admission_request(podgroup("fine")))[1]["response"]
        assert fine["allowed"] is True
        status, body = server.review("/validate", admission_request(podgroup("explode"), uid="boom-1"))
        r = body["response"]
        assert status == 200 and r["uid"] == "boom-1" and r["allowed"] is False
        assert (r["status"]["code"], r["status"]["reason"]) == (500, "InternalError")
        assert "could not judge this object (request boom-1)" in r["status"]["message"]
        assert "Traceback" not in json.dumps(body)
        _, _, metrics = server.get("/metrics")
        line = next(x for x in metrics.decode().splitlines()
                    if x.startswith('workload_webhook_internal_errors_total{endpoint="validate"}'))
        assert float(line.rsplit(" ", 1)[1]) == 1.0
        assert "injected engine fault" in server.log() and '"msg":"engine failed"' in server.log()
