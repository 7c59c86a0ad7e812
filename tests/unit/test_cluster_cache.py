"""The watch cache's event handling, fed with events exactly as the official
`kubernetes` client's Watch yields them: the API server's JSON lines passed
through the client's own `Watch.unmarshal_event`."""
import json

import pytest
from kubernetes import watch

from webhook import config
from webhook.commands import serve as serve_command
from webhook.cli import build_parser
from webhook.cluster.store import PackedStore as Store
from webhook.cluster.watch import RELIST


def pg(name, rv, ns="ml", **spec):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv)},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def event(kind, obj):
    """One line of a watch stream, decoded by the client (return_type None: custom objects)."""
    line = json.dumps({"type": kind, "object": obj})
    return watch.Watch().unmarshal_event(line, None)


def listed():
    s = Store()
    s.replace([pg("a", 10), pg("b", 11)], "11")
    return s


def test_list_replaces_everything_and_marks_synced():
    s = Store()
    assert not s.synced
    s.replace([pg("a", 1)], "5")
    s.replace([pg("b", 2)], "6")
    assert s.synced and s.get("ml", "a") is None and s.get("ml", "b")["metadata"]["name"] == "b"
    assert s.resource_version == "6"


def test_added_modified_deleted():
    s = listed()
    assert s.apply(event("ADDED", pg("c", 12))) is None
    assert s.get("ml", "c") is not None and s.resource_version == "12"
    assert s.apply(event("MODIFIED", pg("c", 13, resourceClaims=[{"name": "gpu", "resourceClaimName": "g"}]))) is None
    assert s.get("ml", "c")["spec"]["resourceClaims"][0]["name"] == "gpu"
    assert s.apply(event("DELETED", pg("a", 14))) is None
    assert s.get("ml", "a") is None and s.resource_version == "14"


def test_same_name_other_namespace_is_another_object():
    s = listed()
    s.apply(event("ADDED", pg("a", 12, ns="other")))
    assert s.get("ml", "a")["metadata"]["resourceVersion"] == "10"
    assert s.get("other", "a")["metadata"]["resourceVersion"] == "12"


def test_bookmark_moves_the_version_only():
    s = listed()
    bookmark = {"kind": "PodGroup", "apiVersion": "scheduling.k8s.io/v1beta1",
                "metadata": {"resourceVersion": "99", "annotations": {"k8s.io/initial-events-end": "true"}}}
    assert s.apply(event("BOOKMARK", bookmark)) is None
    assert s.resource_version == "99" and len(s.objects) == 2


def test_410_gone_asks_for_a_relist():
    s = listed()
    gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
            "message": "too old resource version: 11 (50)"}
    assert s.apply(event("ERROR", gone)) == RELIST
    assert s.synced  # the cache keeps answering from what it has until the relist lands


def test_unknown_or_broken_events_ask_for_a_relist():
    s = listed()
    assert s.apply({"type": "WHATEVER", "object": pg("z", 1), "raw_object": pg("z", 1)}) == RELIST
    assert s.apply({"type": "ADDED", "object": "garbage", "raw_object": "garbage"}) == RELIST


# --- server settings: flags over environment over the config file
def ns(*flags):
    return build_parser().parse_args(["serve", *flags])


def test_server_settings_precedence():
    cfg = config.from_dict({"server": {"port": 9000, "workers": 3, "logFormat": "text"}})
    s = serve_command.server_settings(cfg, ns("--port", "9443"), environ={"WW_PORT": "9100", "WW_WORKERS": "5"})
    assert (s.port, s.workers, s.logFormat, s.maxBodyBytes) == (9443, 5, "text", 7 * 1024 * 1024)


@pytest.mark.parametrize("env", [{"WW_PORT": "http"}, {"WW_WORKERS": "0"}, {"WW_LOG_FORMAT": "xml"}])
def test_server_settings_refuse_bad_values(env):
    with pytest.raises(config.ConfigError):
        serve_command.server_settings(config.Config(), ns(), environ=env)


def test_informer_backs_off_against_a_server_that_drops_every_connection(tmp_path):
    """A loopback listener that accepts and closes at once: the informer keeps
    retrying, with a doubling pause, not in a tight loop (counted connections)."""
    import socket
    import threading
    import time as _time

    from webhook.cluster.cache import Informer, api_client
    from tests.unit.helpers import kubeconfig_to

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    accepted, stop = [], threading.Event()

    def drop_all():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                accepted.append(_time.monotonic())
                conn.close()
            except OSError:
                pass
    threading.Thread(target=drop_all, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_to(f"https://127.0.0.1:{listener.getsockname()[1]}"))
    informer = Informer(api_client("kubeconfig", str(kubeconfig)), "podgroups",
                        ("v1beta1",))
    informer.start()
    try:
        _time.sleep(4.0)
    finally:
        informer.stop()
        stop.set()
        listener.close()
    assert not informer.store.synced
    # Pauses of 0.5, 1 and 2 s fit about four rounds in 4 s (urllib3 may retry a round a few times);
    # a loop without backoff would open hundreds.
    assert 2 <= len(accepted) <= 24, len(accepted)
