package main

import (
	"encoding/json"
	"fmt"
	_ "unsafe" // go:linkname

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/controller/job" // the names below are its own functions
)

// The in-tree Job controller's name generators, called as they are (unexported, so linked by name):
// the differential test checks the Python builder's names against them, at the length limits too.
//
//go:linkname computeWorkloadName k8s.io/kubernetes/pkg/controller/job.computeWorkloadName
func computeWorkloadName(job *batch.Job) string

//go:linkname computePodGroupName k8s.io/kubernetes/pkg/controller/job.computePodGroupName
func computePodGroupName(workloadName, templateName string) string

// buildCase is one "build" line: an object of the leaf or composite embedding (builder.go),
// the item names, the controller's defaults (a default policy, a priorityClassName, the Job's
// minCount callback) and the owner, from which the Workload's and PodGroups' names are generated.
type buildCase struct {
	ID        int                    `json:"id"`
	Mode      string                 `json:"mode"` // "build"
	Embedding string                 `json:"embedding"`
	Object    json.RawMessage        `json:"object"`
	RootName  string                 `json:"rootName"`
	Defaults  *buildDefaults         `json:"defaults"`
	Namespace string                 `json:"namespace"`
	Owner     *metav1.OwnerReference `json:"owner"`
	// Requests: template names to materialize (PodGroups from podGroups, CompositePodGroups from composites).
	PodGroups  []string `json:"podGroups"`
	Composites []string `json:"composites"`
}

type buildDefaults struct {
	Gang              bool   `json:"gang"`              // the default policy is gang (minCount unset), not basic
	PriorityClassName string `json:"priorityClassName"` // copied onto every template
	MinCountDefault   *int32 `json:"minCountDefault"`   // a callback: an unset gang minCount becomes max(1, this)
}

type built struct {
	Name   string          `json:"name,omitempty"`
	Object json.RawMessage `json:"object,omitempty"`
	Error  string          `json:"error,omitempty"`
}

type buildAnswer struct {
	ID           int             `json:"id"`
	WorkloadName string          `json:"workloadName"`
	Workload     json.RawMessage `json:"workload,omitempty"`
	BuildError   string          `json:"buildError,omitempty"`
	PodGroups    []built         `json:"podGroups"`
	Composites   []built         `json:"composites"`
	Failure      string          `json:"failure,omitempty"`
}

func (d *buildDefaults) apply(item *workloadbuilder.WorkloadItem) {
	if d == nil {
		return
	}
	cfg := &workloadbuilder.SchedulingConfig{Policy: &workloadbuilder.SchedulingPolicy{Basic: &workloadbuilder.BasicSchedulingPolicy{}},
		PriorityClassName: d.PriorityClassName}
	if d.Gang {
		cfg.Policy = &workloadbuilder.SchedulingPolicy{Gang: &workloadbuilder.GangSchedulingPolicy{}}
	}
	item.DefaultConfig = cfg
	if d.MinCountDefault != nil {
		n := max(int32(1), *d.MinCountDefault)
		item.Callbacks = append(item.Callbacks, func(c *workloadbuilder.SchedulingConfig) {
			if c.Policy != nil && c.Policy.Gang != nil && c.Policy.Gang.MinCount == nil {
				c.Policy.Gang.MinCount = &n
			}
		})
	}
	for _, child := range item.Children {
		d.apply(child)
	}
}

func marshal(obj any) json.RawMessage {
	data, err := json.Marshal(obj)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return data
}

func build(c buildCase) buildAnswer {
	out := buildAnswer{ID: c.ID, PodGroups: []built{}, Composites: []built{}}
	item := leafItem
	if c.Embedding == "composite" {
		item = compositeItem
	}
	root, err := item(c.Object)
	if err != nil {
		out.Failure = err.Error()
		return out
	}
	root.Name = c.RootName
	c.Defaults.apply(root)
	var ownerName string
	var ownerUID types.UID
	if c.Owner != nil {
		ownerName, ownerUID = c.Owner.Name, c.Owner.UID
	}
	out.WorkloadName = computeWorkloadName(&batch.Job{ObjectMeta: metav1.ObjectMeta{Name: ownerName, UID: ownerUID}})
	b := workloadbuilder.NewBuilder(root, workloadbuilder.BuildOptions{Name: out.WorkloadName, Namespace: c.Namespace,
		Owner: c.Owner})
	wl, err := b.BuildWorkload()
	if err != nil {
		out.BuildError = err.Error()
		return out
	}
	wl.TypeMeta = metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "Workload"}
	out.Workload = marshal(wl)
	for _, tpl := range c.PodGroups {
		name := computePodGroupName(wl.Name, tpl)
		pg, err := b.NewPodGroup(name, tpl)
		if err != nil {
			out.PodGroups = append(out.PodGroups, built{Name: name, Error: err.Error()})
			continue
		}
		pg.TypeMeta = metav1.TypeMeta{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"}
		out.PodGroups = append(out.PodGroups, built{Name: name, Object: marshal(pg)})
	}
	for _, tpl := range c.Composites {
		name := computePodGroupName(wl.Name, tpl)
		cpg, err := b.NewCompositePodGroup(name, tpl)
		if err != nil {
			out.Composites = append(out.Composites, built{Name: name, Error: err.Error()})
			continue
		}
		cpg.TypeMeta = metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1alpha3", Kind: "CompositePodGroup"}
		out.Composites = append(out.Composites, built{Name: name, Object: marshal(cpg)})
	}
	return out
}
