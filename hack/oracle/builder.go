package main

import (
	"context"
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	sigsjson "sigs.k8s.io/json"
)

// leafBlocks are the four leaf blocks under one `scheduling` field of the CRD.
type leafBlocks struct {
	SchedulingPolicy      *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy      `json:"schedulingPolicy,omitempty"`
	SchedulingConstraints *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
	DisruptionMode        *schedulingv1alpha3.WorkloadPodGroupDisruptionMode        `json:"disruptionMode,omitempty"`
	ResourceClaims        []schedulingv1alpha3.WorkloadPodGroupResourceClaim        `json:"resourceClaims,omitempty"`
}

// compositeBlocks are the composite group's blocks at spec.scheduling.
type compositeBlocks struct {
	SchedulingPolicy      *schedulingv1alpha3.WorkloadCompositePodGroupSchedulingPolicy      `json:"schedulingPolicy,omitempty"`
	SchedulingConstraints *schedulingv1alpha3.WorkloadCompositePodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
	DisruptionMode        *schedulingv1alpha3.WorkloadCompositePodGroupDisruptionMode        `json:"disruptionMode,omitempty"`
}

// leafObject: a CRD with one leaf group at spec.scheduling (sized by spec.replicas, which the
// library does not read).
type leafObject struct {
	Spec struct {
		Scheduling *leafBlocks `json:"scheduling,omitempty"`
	} `json:"spec"`
}

// compositeObject: a composite group at spec.scheduling over the leaf groups of
// spec.replicatedJobs[*].scheduling, one child per replicated job, named by its `name`.
type compositeObject struct {
	Spec struct {
		Scheduling     *compositeBlocks `json:"scheduling,omitempty"`
		ReplicatedJobs []struct {
			Name       string      `json:"name"`
			Scheduling *leafBlocks `json:"scheduling,omitempty"`
		} `json:"replicatedJobs,omitempty"`
	} `json:"spec"`
}

// decode reads JSON as the API machinery does: case-sensitive field names, unknown fields dropped.
func decode(data []byte, into any) error {
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
		return fmt.Errorf("does not decode: %w", err)
	}
	return nil
}

// basicByDefault is what an unset policy resolves to (the library: "nil resolves to Basic";
// the webhook's default `defaultPolicy: basic`), given as the controller's default config.
func basicByDefault() *workloadbuilder.SchedulingConfig {
	return &workloadbuilder.SchedulingConfig{Policy: &workloadbuilder.SchedulingPolicy{Basic: &workloadbuilder.BasicSchedulingPolicy{}}}
}

func leafInput(b *leafBlocks) workloadbuilder.WorkloadInput {
	if b == nil {
		b = &leafBlocks{}
	}
	return workloadbuilder.WorkloadInput{
		Policy:         workloadbuilder.PolicyInput{PodGroupData: b.SchedulingPolicy, PathElements: []string{"schedulingPolicy"}},
		Constraints:    workloadbuilder.ConstraintsInput{PodGroupData: b.SchedulingConstraints, PathElements: []string{"schedulingConstraints"}},
		DisruptionMode: workloadbuilder.DisruptionModeInput{PodGroupData: b.DisruptionMode, PathElements: []string{"disruptionMode"}},
		ResourceClaims: workloadbuilder.ResourceClaimsInput{PodGroupData: b.ResourceClaims, PathElements: []string{"resourceClaims"}},
	}
}

func compositeInput(b *compositeBlocks) workloadbuilder.WorkloadInput {
	if b == nil {
		b = &compositeBlocks{}
	}
	return workloadbuilder.WorkloadInput{
		Policy:         workloadbuilder.PolicyInput{CompositePodGroupData: b.SchedulingPolicy, PathElements: []string{"schedulingPolicy"}},
		Constraints:    workloadbuilder.ConstraintsInput{CompositePodGroupData: b.SchedulingConstraints, PathElements: []string{"schedulingConstraints"}},
		DisruptionMode: workloadbuilder.DisruptionModeInput{CompositePodGroupData: b.DisruptionMode, PathElements: []string{"disruptionMode"}},
	}
}

var scheduling = field.NewPath("spec", "scheduling")

func leafItem(data []byte) (*workloadbuilder.WorkloadItem, error) {
	var obj leafObject
	if err := decode(data, &obj); err != nil {
		return nil, err
	}
	return &workloadbuilder.WorkloadItem{Name: "root", Path: scheduling, DefaultConfig: basicByDefault(),
		Input: leafInput(obj.Spec.Scheduling)}, nil
}

func compositeItem(data []byte) (*workloadbuilder.WorkloadItem, error) {
	var obj compositeObject
	if err := decode(data, &obj); err != nil {
		return nil, err
	}
	root := &workloadbuilder.WorkloadItem{Name: "root", Path: scheduling, DefaultConfig: basicByDefault(),
		Input: compositeInput(obj.Spec.Scheduling)}
	for i, rj := range obj.Spec.ReplicatedJobs {
		root.Children = append(root.Children, &workloadbuilder.WorkloadItem{
			Name: rj.Name, Path: field.NewPath("spec", "replicatedJobs").Index(i).Child("scheduling"),
			DefaultConfig: basicByDefault(), Input: leafInput(rj.Scheduling)})
	}
	return root, nil
}

// validateAsOperator is the operator's call: every policy and mode allowed, declarative validation on,
// the stored object's tree as OldRoot on update.
func validateAsOperator(item func([]byte) (*workloadbuilder.WorkloadItem, error), obj, old []byte) (field.ErrorList, error) {
	root, err := item(obj)
	if err != nil {
		return nil, err
	}
	var input workloadbuilder.ValidationInput
	if old != nil {
		if input.OldRoot, err = item(old); err != nil {
			return nil, fmt.Errorf("old object: %w", err)
		}
	}
	return workloadbuilder.NewBuilder(root, workloadbuilder.BuildOptions{
		AllowedPolicies:        []workloadbuilder.SchedulingPolicyOption{workloadbuilder.BasicPolicy, workloadbuilder.GangPolicy},
		AllowedDisruptionModes: []workloadbuilder.DisruptionModeOption{workloadbuilder.SingleMode, workloadbuilder.AllMode},
	}).Validate(context.Background(), input), nil
}

func judgeLeaf(obj, old []byte) (field.ErrorList, error) {
	return validateAsOperator(leafItem, obj, old)
}

func judgeComposite(obj, old []byte) (field.ErrorList, error) {
	return validateAsOperator(compositeItem, obj, old)
}
