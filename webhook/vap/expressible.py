"""What the VAP export may take over from the webhook, as an allow-list: every setting
of a target entry (webhook.targets.written_settings) and every config setting that target
rules read is classified here. STATED: the policies (webhook.vap.targets) state its rule;
NEUTRAL: it names the target or only mutates (DEF-1 stays /mutate's); any other value: why
it stays the webhook's. A target is expressible only when all it sets is STATED or NEUTRAL,
so a setting added later and missing here keeps its target in the webhook (and
tests/unit/test_vap_targets.py fails for a config schema field that is not classified):
`mode: replace` never hands a rule to policies that do not state it."""
from __future__ import annotations

from webhook.config import Config
from webhook.targets import Target

STATED, NEUTRAL = "stated", "neutral"
_OBJECT_WIDE = ("exclusive", "operatorOwned", "references", "counts", "immutable", "agree", "refuse", "require",
                "matched", "setOnce")
TARGET_SETTINGS: dict[str, str] = {
    **{k: NEUTRAL for k in ("group", "kind", "versions", "plural", "profile")},
    "conditions": NEUTRAL,              # names only: what uses a condition is classified itself
    **{f"groups.{k}": STATED for k in ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims",
                                       "at", "size", "minCount", "defaultPolicy", "minCountRequired", "setOnce",
                                       "frozenBlocks", "nonPositiveMinCountIsUnset")},
    "groups.size.path": STATED,
    "groups.size.default": STATED,
    **{f"groups.size.{k}": "its size is a sum over a list" for k in ("sum", "product", "defaults", "only")},
    "groups.defaultMinCount": NEUTRAL,
    "groups.maxGroups": "maxGroups (TGT-11)",
    "groups.gangIncompatible": "gangIncompatible (TGT-10)",
    "groups.boundUnless": "boundUnless (a condition on the object lifts POL-3)",
    **{f"composite.{k}": "composite: minGroupCount against the number of child groups"
       for k in ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "children")},
    **{f"checks.{k}": f"checks.{k}: an object-wide rule (TGT-5..9)" for k in _OBJECT_WIDE},
}
CONFIG_SETTINGS: dict[str, str] = {
    "limits.maxMinCount": STATED,
    "limits.allowedTopologyKeys": "limits.allowedTopologyKeys (CON-1)",
    "policies.forbidAllWithBasic": STATED,
    "policies.minCountWithinSize": STATED,
    "policies.checkPodGroupAgainstWorkload": NEUTRAL,       # PodGroups only (PG-2)
    "enforcement.default": STATED,
    "enforcement.rules": STATED,
    "enforcement.targets": STATED,
    "enforcement.namespaces": "enforcement.namespaces: one binding cannot carry per-namespace actions",
}
#: Config sections no target rule reads (the targets themselves are classified above; gangByDefault only mutates).
UNREAD_SECTIONS = frozenset({"featureGates", "pods", "server", "certificates", "profiles", "vap", "targets", "bridge",
                             "events", "gangByDefault", "gangs"})
#: When a config setting that stays the webhook's is in effect for a target.
_IN_EFFECT = {
    "limits.allowedTopologyKeys": lambda cfg, t: bool(cfg.allowedTopologyKeys)
    and any(g.schedulingConstraints is not None for g in t.groups),
    "enforcement.namespaces": lambda cfg, t: bool(cfg.enforcement.namespaces),
}


def reasons(target: Target, cfg: Config) -> list[str]:
    """Why a target stays the webhook's; [] only when everything it sets is classified
    expressible and within what the policies state."""
    why = [CONFIG_SETTINGS[name] for name, applies in _IN_EFFECT.items() if applies(cfg, target)]
    if not target.written:
        why.append("its settings are unknown (not parsed from a config entry)")
    for name in sorted(target.written):
        verdict = TARGET_SETTINGS.get(name, f"{name}: not classified for the export (webhook.vap.expressible)")
        if verdict not in (STATED, NEUTRAL) and verdict not in why:
            why.append(verdict)
    for i, g in enumerate(target.groups):      # the limits of what the stated settings state
        if any(p.wildcards for p in g.paths().values()):
            why.append(f"groups[{i}]: its paths fan out ([*]); CEL messages cannot name every index")
        if g.semantics.nonPositiveMinCountIsUnset and g.semantics.minCountRequired:
            why.append(f"groups[{i}]: nonPositiveMinCountIsUnset with minCountRequired")
    return why
