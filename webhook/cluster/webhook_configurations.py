"""The two webhook configurations a release registers, and where the API server
sends their reviews: one definition for the registrar (cluster/registrar.py writes
them once this Pod is a ready endpoint of its Service) and `check`
(webhook/commands/check.py asks every ready endpoint, as the API server does)."""
from __future__ import annotations

VALIDATING, MUTATING = "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"
KINDS = (VALIDATING, MUTATING)
PLURALS = {VALIDATING: "validatingwebhookconfigurations", MUTATING: "mutatingwebhookconfigurations"}


def ready(endpoint: dict) -> bool:
    """An EndpointSlice endpoint the API server sends to: its ready condition is not false
    (unset means ready, as the EndpointSlice API says)."""
    return (endpoint.get("conditions") or {}).get("ready") is not False


def ready_endpoints(slices: list[dict], port_name: str | None = None) -> list[tuple[str, int | None]]:
    """(address, port) of every ready endpoint's addresses in `slices`; the port is the
    slice's port named `port_name` (a Service port's name; None for an unnamed one), None
    when the slice has no such port."""
    out = []
    for s in slices:
        port = next((p.get("port") for p in s.get("ports") or [] if p.get("name") == port_name), None)
        for ep in s.get("endpoints") or []:
            if ready(ep):
                out += [(address, port) for address in ep.get("addresses") or []]
    return out
