package main

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	batchv1declarative "k8s.io/kubernetes/pkg/apis/batch/v1"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// jobObject: the CRD's spec is the JobSpec's scheduling fields (`scheduling`, `parallelism`, ...).
type jobObject struct {
	Spec batchv1.JobSpec `json:"spec"`
}

var jobLabels = map[string]string{"oracle": "job"}

// versionedJob is the Job kube-apiserver would hold after decoding and defaulting: the case's
// spec fields around a fixed valid Pod template and selector (no error outside spec.scheduling).
// On update (stored: the stored Job) the request is the stored Job with the case's `scheduling`
// and `parallelism` put in, as a client's PUT of what it read (the defaulted completions stay).
func versionedJob(data []byte, stored *batchv1.Job) (*batchv1.Job, error) {
	var obj jobObject
	if err := decode(data, &obj); err != nil {
		return nil, err
	}
	if stored != nil {
		job := stored.DeepCopy()
		job.Spec.Scheduling, job.Spec.Parallelism = obj.Spec.Scheduling, obj.Spec.Parallelism
		legacyscheme.Scheme.Default(job)
		return job, nil
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "oracle", Namespace: "default", ResourceVersion: "1"},
		Spec:       obj.Spec,
	}
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: jobLabels}
	job.Spec.ManualSelector = new(true)
	job.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: jobLabels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	legacyscheme.Scheme.Default(job)
	return job, nil
}

// jobs is the versioned Job kube-apiserver validates declaratively and its internal form, which the
// hand-written validation reads.
func jobs(data []byte, stored *batchv1.Job) (*batchv1.Job, *batch.Job, error) {
	v, err := versionedJob(data, stored)
	if err != nil {
		return nil, nil, err
	}
	internal := &batch.Job{}
	if err := legacyscheme.Scheme.Convert(v, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("does not convert: %w", err)
	}
	return v, internal, nil
}

// judgeJob: kube-apiserver's two layers for a Job's spec, the generated declarative validation
// of batch/v1 (gate WorkloadWithJob on) and the hand-written batch validation.
func judgeJob(obj, old []byte) (field.ErrorList, error) {
	op := operation.Operation{Type: operation.Create, Options: map[string]bool{"WorkloadWithJob": true}}
	spec := field.NewPath("spec")
	opts := batchvalidation.JobValidationOptions{}
	var oldV *batchv1.Job
	var oldI *batch.Job
	if old != nil {
		var err error
		if oldV, oldI, err = jobs(old, nil); err != nil {
			return nil, fmt.Errorf("old object: %w", err)
		}
		op.Type = operation.Update
	}
	newV, newI, err := jobs(obj, oldV)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if old == nil {
		errs = batchvalidation.ValidateJobSpec(&newI.Spec, nil, spec, opts.PodValidationOptions)
	} else {
		errs = batchvalidation.ValidateJobSpecUpdate(newI.Spec, oldI.Spec, spec, opts)
	}
	return append(errs, batchv1declarative.Validate_Job(context.Background(), op, nil, newV, oldV)...), nil
}
