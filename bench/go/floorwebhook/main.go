// floorwebhook: the floor a Pod-mutating webhook can reach, in Go's standard
// library, for the burst benchmark. It decodes the whole AdmissionReview and
// answers with the fixed JSON patch read from -patch (the product's own patch
// for the burst's Pods), with no lookup and no rule. HTTP/1.1 over TLS, the
// protocol the product speaks (-http2 offers HTTP/2 too). Loopback only.
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"sync/atomic"

	"workload-webhook/bench/webhookserver"
)

func main() {
	server := webhookserver.ServerFlags()
	patchFile := flag.String("patch", "", "the JSON patch to answer with")
	flag.Parse()
	raw, err := os.ReadFile(*patchFile)
	if err != nil {
		log.Fatal(err)
	}
	var ops []map[string]interface{}
	if err := json.Unmarshal(raw, &ops); err != nil {
		log.Fatal("the patch is not a JSON array: ", err)
	}
	patch := base64.StdEncoding.EncodeToString(raw)
	var answered int64
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		in := webhookserver.Decode[json.RawMessage](w, r)
		if in == nil {
			return
		}
		var pod map[string]interface{}
		if err := json.Unmarshal(in.Object, &pod); err != nil {
			http.Error(w, "bad object", http.StatusBadRequest)
			return
		}
		atomic.AddInt64(&answered, 1)
		webhookserver.Answer(w, webhookserver.Response{UID: in.UID, Allowed: true, PatchType: "JSONPatch", Patch: patch})
	})
	// Anything else (scheduling objects, the validating entries of the same registration): allowed.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if in := webhookserver.Decode[json.RawMessage](w, r); in != nil {
			webhookserver.Answer(w, webhookserver.Response{UID: in.UID, Allowed: true})
		}
	})
	mux.HandleFunc("/answered", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]int64{"answered": atomic.LoadInt64(&answered)})
	})
	server.Serve(mux)
}
