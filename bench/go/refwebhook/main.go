// refwebhook: the reference a webhook in Go's standard library sets for the
// service benchmark. It decodes the AdmissionReview, walks the whole object
// (as any rule engine must at least do) and answers allowed. Loopback only.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"time"
)

type review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *reviewRequest  `json:"request,omitempty"`
	Response   *reviewResponse `json:"response,omitempty"`
}

type reviewRequest struct {
	UID    string      `json:"uid"`
	Object interface{} `json:"object"`
}

type reviewResponse struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
}

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
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	cert := flag.String("cert", "", "tls.crt")
	key := flag.String("key", "", "tls.key")
	flag.Parse()
	handler := func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 7<<20)).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		walk(in.Request.Object)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
			Response: &reviewResponse{UID: in.Request.UID, Allowed: true}})
	}
	srv := &http.Server{Addr: *addr, Handler: http.HandlerFunc(handler), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
