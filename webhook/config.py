"""Typed settings, loaded from the YAML file of docs/configuration.md and validated by
`schemas/config.schema.json`. Every problem in a file is reported at once."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from webhook import formats, profiles
from webhook.field import FieldError, Path, invalid
from webhook.schemas import structural_errors
from webhook.server_settings import ServerSettings
from webhook.enforcement import Enforcement, parse as parse_enforcement, selects
from webhook.targets import Target, parse_target

DEFAULT_GATES = {
    "GenericWorkload": True,
    "TopologyAwareWorkloadScheduling": True,
    "DRAWorkloadResourceClaims": True,
    "CompositePodGroup": False,
    "PodGroupPreemptionPolicy": False,
    "WorkloadWithJob": False,          # batch/v1 JobSpec.scheduling (webhook.rules.job)
}
DEFAULT_GROUP_LABEL = "scheduling.k8s.io/pod-group"
DEFAULT_WORKLOAD_LABEL = "scheduling.k8s.io/workload"


class ConfigError(Exception):
    """An unusable configuration; `problems` lists each one as `path: reason`."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class CertificateSettings:
    """Where serving certificates come from: `files` in the cert dir (generated
    for development when absent, e.g. mounted by cert-manager), or `secret`:
    kept in a Secret, renewed, and the webhook configurations' caBundle patched."""
    mode: str = "files"
    secret: str | None = None                 # namespace/name, for mode secret
    webhookConfiguration: str = "workload-webhook"
    caConfigMap: str | None = None            # gets ca.crt only (scrapers never read the Secret with the CA key)
    dnsNames: tuple[str, ...] = ()
    caValiditySeconds: int = 10 * 365 * 86400
    leafValiditySeconds: int = 365 * 86400
    graceSeconds: int = 120
    checkIntervalSeconds: int = 30


@dataclass(frozen=True)
class VapSettings:
    """Targets as ValidatingAdmissionPolicies (webhook.vap.targets): `replace` stops sending
    a fully expressible target's validation to the webhook; `alongside` keeps both."""
    enabled: bool = False
    mode: str = "alongside"


@dataclass(frozen=True)
class BridgeSettings:
    """Jobs written for Coscheduling or Volcano, gang-scheduled by kube-scheduler
    (webhook/bridge/, webhook/foreign/): each dialect is opt-in; `schedulerNames` are handed to the default scheduler."""
    coscheduling: bool = False
    volcano: bool = False
    schedulerNames: tuple[str, ...] = ()
    leaseName: str = "workload-webhook-bridge"
    leaseNamespace: str = ""                   # empty: the serving Pod's namespace, else default
    leaseDurationSeconds: int = 15
    resyncSeconds: int = 300

    @functools.cached_property        # asked twice per Pod admitted
    def dialects(self) -> tuple[str, ...]:
        """The dialects switched on, by name."""
        return tuple(n for n, on in (("coscheduling", self.coscheduling), ("volcano", self.volcano)) if on)


@dataclass(frozen=True)
class EventSettings:
    """Kubernetes Events for denials (webhook.cluster.events), rate-limited per worker."""
    enabled: bool = False
    perMinute: int = 60
    burst: int = 10


@dataclass(frozen=True)
class GangSettings:
    """The live gang model (webhook.gangs): off unless `model`; its Events on PodGroups are
    rate-limited across the whole cluster (one replica writes, under the bridge's Lease)."""
    model: bool = False
    eventsPerMinute: int = 120
    eventsBurst: int = 30


@dataclass(frozen=True)
class NamespaceSelector:
    """A label selector over a namespace's labels (a webhook's namespaceSelector); empty: every namespace."""
    matchLabels: tuple[tuple[str, str], ...] = ()
    matchExpressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: dict) -> bool:
        return selects(self.matchLabels, self.matchExpressions, labels)

    def as_label_selector(self) -> dict:
        """The Kubernetes LabelSelector of the webhook configuration."""
        out: dict = {}
        if self.matchLabels:
            out["matchLabels"] = dict(self.matchLabels)
        if self.matchExpressions:
            out["matchExpressions"] = [{"key": k, "operator": op, **({"values": list(v)} if op in ("In", "NotIn") else {})}
                                       for k, op, v in self.matchExpressions]
        return out


@dataclass(frozen=True)
class GangByDefault:
    """DEF-2 (webhook.mutation.gang_default): at CREATE, multi-Pod Jobs and the named targets'
    groups without a scheduling policy get a gang of their size. Opt-in."""
    enabled: bool = False
    namespaceSelector: NamespaceSelector = field(default_factory=NamespaceSelector)
    disruptionMode: str = "single"
    jobs: bool = True
    targets: tuple[str, ...] = ()          # Kind.group of configured targets

    @property
    def for_jobs(self) -> bool:
        return self.enabled and self.jobs

    def for_target(self, key: str) -> bool:
        return self.enabled and key in self.targets


@dataclass(frozen=True)
class Config:
    featureGates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES))
    forbidAllWithBasic: bool = True
    checkPodGroupAgainstWorkload: bool = True
    minCountWithinSize: bool = True
    maxMinCount: int | None = None
    allowedTopologyKeys: tuple[str, ...] = ()
    groupLabel: str = DEFAULT_GROUP_LABEL
    workloadLabel: str | None = DEFAULT_WORKLOAD_LABEL
    onMissingPodGroup: str = "allow"
    claimsToContainers: str = "none"
    podValidation: str = "policy"      # POD-3 on the final Pod: ValidatingAdmissionPolicy | webhook
    targets: tuple[Target, ...] = ()
    server: ServerSettings = field(default_factory=ServerSettings)
    certificates: CertificateSettings = field(default_factory=CertificateSettings)
    enforcement: Enforcement = field(default_factory=Enforcement)
    vap: "VapSettings" = field(default_factory=lambda: VapSettings())
    bridge: BridgeSettings = field(default_factory=BridgeSettings)
    events: EventSettings = field(default_factory=EventSettings)
    gangByDefault: GangByDefault = field(default_factory=GangByDefault)
    gangs: GangSettings = field(default_factory=GangSettings)

    def gate(self, name: str) -> bool:
        return self.featureGates.get(name, False)

    def target_for(self, group: str, version: str, kind: str) -> Target | None:
        return next((t for t in self.targets if t.matches(group, version, kind)), None)


def server_problems(s: ServerSettings) -> list[str]:
    """The same bounds as the config schema, for values that came from flags or env."""
    data = {k: getattr(s, k) for k in ServerSettings.__dataclass_fields__}
    errors = structural_errors("config", {"server": data})
    if not errors and (budget := _budget_error(s)) is not None:
        errors.append(budget)
    problems = _problems(errors)
    if s.metricsPort and s.metricsPort == s.port:
        problems.append(f"server.metricsPort: Invalid value: {s.metricsPort}: must differ from server.port "
                        "(0 serves /metrics on the admission port)")
    return problems


def _budget_error(s: ServerSettings) -> FieldError | None:
    """A body claims up to maxBodyBytes of the budget at once (webhook/server/budget.py):
    a smaller budget could never hold the largest body the server accepts."""
    if s.bodyBudgetBytes < s.maxBodyBytes:
        return invalid(Path("server", "bodyBudgetBytes"), s.bodyBudgetBytes,
                       f"must be at least server.maxBodyBytes ({s.maxBodyBytes})")
    return None


def _problems(errors: list[FieldError]) -> list[str]:
    return [f"{e.field or '(top level)'}: {e.body()}" for e in errors]


def from_dict(data: Any, source: str = "<config>") -> Config:
    if data is None:
        data = {}
    errors = structural_errors("config", data)
    if errors:
        raise ConfigError(source, _problems(errors))
    data = {**data, "targets": [*(data.get("targets") or []), *profiles.expand(data.get("profiles") or [], errors)]}
    if errors:
        raise ConfigError(source, _problems(errors))

    targets = [parse_target(t, Path("targets", ti), errors) for ti, t in enumerate(data.get("targets") or [])]
    seen: dict[tuple, int] = {}
    for ti, t in enumerate(targets):
        for v in t.versions or ("*",):
            key = (t.group, t.kind, v)
            if key in seen:
                errors.append(invalid(Path("targets", ti), f"{t.kind}.{t.group}",
                                      f"configured twice (also targets[{seen[key]}])"))
            seen[key] = ti

    pods = data.get("pods") or {}
    for key in ("groupLabel", "workloadLabel"):
        if pods.get(key) and (problem := formats.qualified_name(pods[key])):
            errors.append(invalid(Path("pods", key), pods[key], problem))
    limits = data.get("limits") or {}
    for i, key in enumerate(limits.get("allowedTopologyKeys") or []):
        if problem := formats.qualified_name(key):
            errors.append(invalid(Path("limits", "allowedTopologyKeys", i), key, problem))
    lease = (data.get("bridge") or {}).get("lease") or {}
    for key, check in (("name", formats.dns_subdomain), ("namespace", formats.dns_label)):
        if lease.get(key) and (problem := check(lease[key])):
            errors.append(invalid(Path("bridge", "lease", key), lease[key], problem))
    cert = data.get("certificates") or {}
    defaults = CertificateSettings()
    grace = cert.get("graceSeconds", defaults.graceSeconds)
    interval = cert.get("checkIntervalSeconds", defaults.checkIntervalSeconds)
    if grace < 3 * interval:
        errors.append(invalid(Path("certificates", "graceSeconds"), grace,
                              f"must be at least 3 x checkIntervalSeconds ({3 * interval}): every replica must "
                              "see a new CA before certificates move to it"))
    enforcement = parse_enforcement(data.get("enforcement"), errors)
    gang = _gang_by_default(data.get("gangByDefault") or {}, {t.key for t in targets}, errors)
    server = ServerSettings(**(data.get("server") or {}))
    if (budget := _budget_error(server)) is not None:
        errors.append(budget)
    if cert.get("mode") == "secret" and "/" not in (cert.get("secret") or ""):
        errors.append(FieldError("Required", Path("certificates", "secret"), detail="namespace/name of the Secret for mode secret"))
    if errors:
        raise ConfigError(source, _problems(errors))

    policies = data.get("policies") or {}
    return Config(
        featureGates={**DEFAULT_GATES, **(data.get("featureGates") or {})},
        forbidAllWithBasic=policies.get("forbidAllWithBasic", True),
        checkPodGroupAgainstWorkload=policies.get("checkPodGroupAgainstWorkload", True),
        minCountWithinSize=policies.get("minCountWithinSize", True),
        maxMinCount=limits.get("maxMinCount"),
        allowedTopologyKeys=tuple(limits.get("allowedTopologyKeys") or ()),
        groupLabel=pods.get("groupLabel", DEFAULT_GROUP_LABEL),
        workloadLabel=pods.get("workloadLabel", DEFAULT_WORKLOAD_LABEL) or None,
        onMissingPodGroup=pods.get("onMissingPodGroup", "allow"),
        claimsToContainers=pods.get("claimsToContainers", "none"),
        podValidation=pods.get("validation", "policy"),
        targets=tuple(targets),
        server=server,
        certificates=CertificateSettings(**{**cert, "dnsNames": tuple(cert.get("dnsNames") or ())}),
        enforcement=enforcement,
        vap=VapSettings(**(data.get("vap") or {})),
        bridge=_bridge(data.get("bridge") or {}),
        events=EventSettings(**(data.get("events") or {})),
        gangByDefault=gang,
        gangs=GangSettings(**(data.get("gangs") or {})),
    )


def _gang_by_default(raw: dict, target_keys: set[str], errors: list[FieldError]) -> GangByDefault:
    where = Path("gangByDefault")
    for i, key in enumerate(raw.get("targets") or []):
        if key not in target_keys:
            errors.append(invalid(where.child("targets").index(i), key, "names no configured target (Kind.group of "
                                  "targets[] or a profile)" + (f"; configured: {', '.join(sorted(target_keys))}"
                                                               if target_keys else "")))
    sel = raw.get("namespaceSelector") or {}
    for key in [*(sel.get("matchLabels") or {}), *(e["key"] for e in sel.get("matchExpressions") or [])]:
        if problem := formats.qualified_name(key):
            errors.append(invalid(where.child("namespaceSelector"), key, f"label key: {problem}"))
    for i, e in enumerate(sel.get("matchExpressions") or []):
        if (e["operator"] in ("In", "NotIn")) != bool(e.get("values")):
            errors.append(invalid(where.child("namespaceSelector", "matchExpressions").index(i), e["operator"],
                                  "In and NotIn need values; Exists and DoesNotExist take none"))
    selector = NamespaceSelector(
        tuple(sorted((sel.get("matchLabels") or {}).items())),
        tuple((e["key"], e["operator"], tuple(e.get("values") or ())) for e in sel.get("matchExpressions") or []))
    return GangByDefault(enabled=raw.get("enabled", False), namespaceSelector=selector,
                         disruptionMode=raw.get("disruptionMode", "single"), jobs=raw.get("jobs", True),
                         targets=tuple(raw.get("targets") or ()))


def _bridge(raw: dict) -> BridgeSettings:
    lease = raw.get("lease") or {}
    defaults = BridgeSettings()
    return BridgeSettings(coscheduling=raw.get("coscheduling", False), volcano=raw.get("volcano", False),
                          schedulerNames=tuple(raw.get("schedulerNames") or ()),
                          leaseName=lease.get("name", defaults.leaseName),
                          leaseNamespace=lease.get("namespace", defaults.leaseNamespace),
                          leaseDurationSeconds=lease.get("durationSeconds", defaults.leaseDurationSeconds),
                          resyncSeconds=raw.get("resyncSeconds", defaults.resyncSeconds))


def load(path: str | os.PathLike | None, profiles: list | tuple = ()) -> Config:
    """Read a config file; None gives the defaults. `profiles` are added to the
    file's own (the CLI's --profile). Raises ConfigError."""
    if path is None:
        return from_dict({"profiles": list(profiles)} if profiles else None, "--profile")
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(source, [f"cannot read: {exc.strerror}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [f"{where}not valid YAML: {getattr(exc, 'problem', None) or exc}"]) from None
    if profiles and isinstance(data, (dict, type(None))):
        data = {**(data or {}), "profiles": [*((data or {}).get("profiles") or []), *profiles]}
    return from_dict(data, source)
