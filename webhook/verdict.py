"""The Verdict: what the engine answers for one object (errors deny, warnings
advise, a patch mutates, enforcement's warned and audited violations). The one
result type of the rules, the engine, the server and the CLI."""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field

from webhook.field import FieldError, FieldWarning


@dataclass
class Verdict:
    """What the engine answers for one object: errors deny, warnings advise,
    `patch` (RFC 6902 ops) mutates. The server and the CLI only render it."""

    errors: list[FieldError] = dc_field(default_factory=list)
    # Each a FieldWarning (path, message, rule as values; its str() the text answered).
    warnings: list[FieldWarning] = dc_field(default_factory=list)
    patch: list[dict] | None = None
    checked: bool = True  # False when no rule applies to this kind
    warned: list[FieldError] = dc_field(default_factory=list)   # violations enforced as `warn` (also in warnings)
    audits: list[FieldError] = dc_field(default_factory=list)   # violations enforced as `audit`: admitted, recorded

    @property
    def action(self) -> str | None:
        """The strictest enforcement action this verdict carries (None: no violation)."""
        return "deny" if self.errors else "warn" if self.warned else "audit" if self.audits else None

    @property
    def allowed(self) -> bool:
        return not self.errors
