// refwebhook: the reference a webhook in Go's standard library sets for the
// service benchmark. It decodes the AdmissionReview, walks the whole object
// (as any rule engine must at least do) and answers allowed. Loopback only.
package main

import (
	"flag"
	"net/http"

	"workload-webhook/bench/webhookserver"
)

func walk(v interface{}) int {
	switch t := v.(type) {
	case map[string]interface{}:
		n := 1
		for _, c := range t {
			n += walk(c)
		}
		return n
	case []interface{}:
		n := 1
		for _, c := range t {
			n += walk(c)
		}
		return n
	default:
		return 1
	}
}

func main() {
	server := webhookserver.ServerFlags()
	flag.Parse()
	server.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := webhookserver.Decode[interface{}](w, r)
		if in == nil {
			return
		}
		walk(in.Object)
		webhookserver.Answer(w, webhookserver.Response{UID: in.UID, Allowed: true})
	}))
}
