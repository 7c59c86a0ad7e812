"""The builder's data: the WorkloadItem tree an operator assembles, its inputs,
the intermediate scheduling config and the build options.

One to one with upstream's Go package
k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder (v0.37.2):

    Go                         Python
    WorkloadItem               WorkloadItem (name, path, default_config, input, callbacks, children)
    WorkloadInput              WorkloadInput (policy, constraints, disruption_mode, resource_claims)
    PolicyInput & co.          BlockInput (pod_group_data, composite_pod_group_data, path_elements)
    SchedulingConfig           SchedulingConfig (the IR: policy, constraints, disruption_mode, ...)
    BuildOptions               BuildOptions (name, namespace, owner, allowed_policies, ...)
    ValidationInput            the `old_root` argument of Builder.validate
    BasicPolicy, GangPolicy    BASIC_POLICY, GANG_POLICY
    SingleMode, AllMode        SINGLE_MODE, ALL_MODE

The building blocks (`pod_group_data`, `composite_pod_group_data`) are the
scheduling.k8s.io/v1alpha3 blocks as JSON (the dicts a CRD's object holds):
`{"gang": {"minCount": 4}}`, `{"topology": [{"key": "rack"}]}`, `{"all": {}}`,
`[{"name": "gpu", "resourceClaimTemplateName": "gpu"}]`. They are expected to be
well-formed (the engine's schema checks, `Builder.validate`, say when not).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from webhook.field import Path

BASIC_POLICY = "basic"
GANG_POLICY = "gang"
SINGLE_MODE = "single"
ALL_MODE = "all"


@dataclass
class GangSchedulingPolicy:
    """All-or-nothing scheduling. `min_count` may be None for a callback to default;
    it must be set before the template compiles. A composite's minGroupCount rides here too."""
    min_count: int | None = None


@dataclass
class SchedulingPolicy:
    """Basic (pod by pod) or gang. An unset policy resolves to basic."""
    basic: bool = False
    gang: GangSchedulingPolicy | None = None


@dataclass
class DisruptionMode:
    single: bool = False
    all: bool = False


@dataclass
class ResourceClaim:
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@dataclass
class SchedulingConfig:
    """The group's scheduling configuration, leaf and composite alike (Go: SchedulingConfig).
    `constraints` lists topology keys; None means no placement constraints."""
    policy: SchedulingPolicy | None = None
    constraints: list[str] | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    priority_class_name: str = ""

    def copy(self) -> "SchedulingConfig":
        """A deep copy (by hand: copy.deepcopy was most of a build's time)."""
        p, d = self.policy, self.disruption_mode
        return SchedulingConfig(
            policy=None if p is None else SchedulingPolicy(
                p.basic, None if p.gang is None else GangSchedulingPolicy(p.gang.min_count)),
            constraints=None if self.constraints is None else list(self.constraints),
            disruption_mode=None if d is None else DisruptionMode(d.single, d.all),
            resource_claims=[ResourceClaim(c.name, c.resource_claim_name, c.resource_claim_template_name)
                             for c in self.resource_claims],
            priority_class_name=self.priority_class_name)


#: Go's SchedulingConfigFunc: post-processes the merged config in place.
SchedulingConfigFunc = Callable[[SchedulingConfig], None]


@dataclass
class BlockInput:
    """One building block and where it sits, relative to its item's path (Go: PolicyInput,
    ConstraintsInput, DisruptionModeInput, ResourceClaimsInput). A leaf item reads
    `pod_group_data`, a composite item `composite_pod_group_data`."""
    pod_group_data: Any = None
    composite_pod_group_data: Any = None
    path_elements: Sequence[str] = ()


@dataclass
class WorkloadInput:
    """The user's blocks for one item; an unset block falls back to the item's default config."""
    policy: BlockInput = field(default_factory=BlockInput)
    constraints: BlockInput = field(default_factory=BlockInput)
    disruption_mode: BlockInput = field(default_factory=BlockInput)
    resource_claims: BlockInput = field(default_factory=BlockInput)

    @classmethod
    def leaf(cls, blocks: dict | None, *, policy: str = "schedulingPolicy",
             constraints: str = "schedulingConstraints", disruption_mode: str = "disruptionMode",
             resource_claims: str = "resourceClaims") -> "WorkloadInput":
        """The leaf blocks of one `scheduling` field (`{"schedulingPolicy": ..., ...}`), each at
        its own key, which is also its path element."""
        b = blocks if isinstance(blocks, dict) else {}
        return cls(BlockInput(pod_group_data=b.get(policy), path_elements=(policy,)),
                   BlockInput(pod_group_data=b.get(constraints), path_elements=(constraints,)),
                   BlockInput(pod_group_data=b.get(disruption_mode), path_elements=(disruption_mode,)),
                   BlockInput(pod_group_data=b.get(resource_claims), path_elements=(resource_claims,)))

    @classmethod
    def composite(cls, blocks: dict | None, *, policy: str = "schedulingPolicy",
                  constraints: str = "schedulingConstraints",
                  disruption_mode: str = "disruptionMode") -> "WorkloadInput":
        """The composite blocks of one `scheduling` field, each at its own key."""
        b = blocks if isinstance(blocks, dict) else {}
        return cls(BlockInput(composite_pod_group_data=b.get(policy), path_elements=(policy,)),
                   BlockInput(composite_pod_group_data=b.get(constraints), path_elements=(constraints,)),
                   BlockInput(composite_pod_group_data=b.get(disruption_mode), path_elements=(disruption_mode,)))


@dataclass
class WorkloadItem:
    """A node of the operator's logical workload. No children: a leaf, compiled into one
    PodGroupTemplate named `name`; children: a composite, compiled into a
    CompositePodGroupTemplate over its children. `path` is where the item's blocks sit in
    the operator's API (errors are reported there)."""
    name: str
    path: Path = field(default_factory=Path)
    default_config: SchedulingConfig | None = None
    input: WorkloadInput = field(default_factory=WorkloadInput)
    callbacks: list[SchedulingConfigFunc] = field(default_factory=list)
    children: list["WorkloadItem | None"] = field(default_factory=list)

    @property
    def composite(self) -> bool:
        return len(self.children) > 0


@dataclass
class BuildOptions:
    """The Workload's identity and the controller's allow-lists (an empty list allows nothing).
    `owner` is an ownerReference as JSON (`apiVersion`, `kind`, `name`, `uid`, optionally
    `controller`, `blockOwnerDeletion`). `disable_declarative_validation` skips the blocks'
    own rules (in-tree controllers whose API server already runs them)."""
    name: str = ""
    namespace: str = ""
    owner: dict | None = None
    allowed_policies: Sequence[str] = ()
    allowed_disruption_modes: Sequence[str] = ()
    disable_declarative_validation: bool = False


#: Every policy and mode: what an operator that supports them all passes.
ALL_POLICIES = (BASIC_POLICY, GANG_POLICY)
ALL_MODES = (SINGLE_MODE, ALL_MODE)


class BuildError(ValueError):
    """The tree cannot be compiled (Go: BuildWorkload's error); the message is Go's."""


class InvocationError(ValueError):
    """The builder was called in a way its contract forbids (Go: an InternalError in
    Validate's list, or an error from NewPodGroup): a bug in the caller, not the user's input."""
