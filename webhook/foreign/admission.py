"""BRG-1 at admission: a foreign PodGroup's create is answered with a warning for each
field that has no in-tree equivalent, saying what happens instead (the reconciler also
records them as an Event). Never a denial: a job's controller must not fail on them."""
from __future__ import annotations

from webhook.foreign.dialects import Dialect, enabled
from webhook.foreign.mirror import min_count, not_mirrored
from webhook.field import FieldWarning, Path, warning
from webhook.verdict import Verdict

WARNING_LIMIT = 120        # ADM-5
#: The rule whose findings a foreign PodGroup's create warnings are (`validate` reports them as warned).
RULE = "BRG-1"


def _short(w: FieldWarning) -> FieldWarning:
    return w.shortened(WARNING_LIMIT)


def validate_foreign(obj: dict, d: Dialect, operation: str) -> Verdict:
    if operation != "CREATE" or not isinstance(obj, dict):
        return Verdict(checked=False)
    warnings = [_short(warning(Path(*path.split(".")), f"not mirrored: {instead}", "BRG-1"))
                for path, _, instead in not_mirrored(d, obj)]
    count = (obj.get("spec") or {}).get("minMember") if isinstance(obj.get("spec"), dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        warnings.append(_short(warning(Path("spec", "minMember"),
                                       f"{count!r}: the in-tree gang gets minCount {min_count(obj)}", "BRG-5")))
    return Verdict(warnings=warnings)


def _cel(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def pod_match_terms(bridge) -> list[str]:
    """What else makes a Pod the webhook's (matchConditions): a dialect's key, or a
    schedulerName to hand off. Empty with the bridge off."""
    terms = [f"(has(object.metadata.{d.pod_key_in}) && {_cel(d.pod_key)} in object.metadata.{d.pod_key_in})"
             for d in enabled(bridge)]
    if bridge.schedulerNames:
        names = ", ".join(_cel(n) for n in bridge.schedulerNames)
        terms.append(f"(has(object.spec.schedulerName) && object.spec.schedulerName in [{names}])")
    return terms


def foreign_rules(bridge) -> list[dict]:
    """The webhook rules that send a foreign PodGroup's create to /validate (BRG-1's warnings)."""
    return [{"apiGroups": [d.group], "apiVersions": [d.version], "resources": [d.plural], "operations": ["CREATE"],
             "scope": "Namespaced"} for d in enabled(bridge)]
