"""A Python workloadbuilder: compile the scheduling blocks an operator embeds in its
CRD into the Workload, PodGroups and CompositePodGroups that Kubernetes 1.37's Go
library (k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder) makes,
validating them with the webhook's own rules. See docs/builder.md."""
from webhook.builder.builder import Builder, controller_ref, owner_reference
from webhook.builder.names import pod_group_name, template_name, workload_name
from webhook.builder.types import (ALL_MODE, ALL_MODES, ALL_POLICIES, BASIC_POLICY, GANG_POLICY, SINGLE_MODE,
                                   BlockInput, BuildError, BuildOptions, DisruptionMode, GangSchedulingPolicy,
                                   InvocationError, ResourceClaim, SchedulingConfig, SchedulingPolicy,
                                   WorkloadInput, WorkloadItem)

__all__ = ["Builder", "controller_ref", "owner_reference", "pod_group_name", "template_name", "workload_name",
           "ALL_MODE", "ALL_MODES", "ALL_POLICIES", "BASIC_POLICY", "GANG_POLICY", "SINGLE_MODE", "BlockInput",
           "BuildError", "BuildOptions", "DisruptionMode", "GangSchedulingPolicy", "InvocationError",
           "ResourceClaim", "SchedulingConfig", "SchedulingPolicy", "WorkloadInput", "WorkloadItem"]
