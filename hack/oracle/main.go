// Command workload-oracle judges embedded scheduling building blocks with
// upstream's own code, for the differential test (tests/e2e/test_upstream_oracle.py):
//
//   - "leaf" and "composite": a CRD judged as an operator judges it with
//     k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder
//     (Builder.Validate, declarative validation on, every policy and mode allowed);
//   - "job": the CRD's spec is a batch/v1 JobSpec, judged as kube-apiserver judges
//     a Job: the generated declarative validation of batch/v1 plus the hand-written
//     k8s.io/kubernetes/pkg/apis/batch/validation.
//
//   - "build" (a case with "mode": "build", build.go): the CRD's tree built with
//     workloadbuilder (BuildWorkload, NewPodGroup, NewCompositePodGroup), named as the
//     in-tree Job controller names its objects; the objects as JSON (TypeMeta set).
//
// Input: one JSON case per line on stdin, {"id", "embedding", "object", "oldObject"}
// (oldObject null on create). Output: one JSON line per case on stdout,
// {"id", "errors": [{"type", "field", "detail"}]}, or {"id", "failure"} when the
// case cannot be judged (it does not decode). One process judges thousands of cases.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

type testCase struct {
	ID        int             `json:"id"`
	Embedding string          `json:"embedding"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
}

type fieldError struct {
	Type   string `json:"type"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

type answer struct {
	ID      int          `json:"id"`
	Errors  []fieldError `json:"errors"`
	Failure string       `json:"failure,omitempty"`
}

// judges maps an embedding to its judge: the errors for (object, old object or nil).
var judges = map[string]func(obj, old []byte) (field.ErrorList, error){
	"leaf":      judgeLeaf,
	"composite": judgeComposite,
	"job":       judgeJob,
}

func judge(c testCase) answer {
	fn, ok := judges[c.Embedding]
	if !ok {
		return answer{ID: c.ID, Failure: fmt.Sprintf("unknown embedding %q", c.Embedding)}
	}
	var old []byte
	if len(c.OldObject) > 0 && string(c.OldObject) != "null" {
		old = c.OldObject
	}
	errs, err := fn(c.Object, old)
	if err != nil {
		return answer{ID: c.ID, Failure: err.Error()}
	}
	out := answer{ID: c.ID, Errors: []fieldError{}}
	for _, e := range errs {
		// "FieldValueInvalid" -> "Invalid", as the webhook names the types; "InternalError" stays.
		out.Errors = append(out.Errors, fieldError{Type: strings.TrimPrefix(string(e.Type), "FieldValue"),
			Field: e.Field, Detail: e.Detail})
	}
	return out
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var c testCase
			var bc buildCase
			var reply any
			if jerr := json.Unmarshal(line, &bc); jerr == nil && bc.Mode == "build" {
				reply = build(bc)
			} else if jerr := json.Unmarshal(line, &c); jerr != nil {
				fmt.Fprintf(os.Stderr, "workload-oracle: a line that is not a case: %v\n", jerr)
				os.Exit(2)
			} else {
				reply = judge(c)
			}
			if eerr := enc.Encode(reply); eerr != nil {
				fmt.Fprintf(os.Stderr, "workload-oracle: %v\n", eerr)
				os.Exit(2)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "workload-oracle: %v\n", err)
			os.Exit(2)
		}
	}
}
