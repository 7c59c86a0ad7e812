// floorwebhook: the floor a Pod-mutating webhook can reach, in Go's standard
// library, for the burst benchmark. It decodes the whole AdmissionReview and
// answers with the fixed JSON patch read from -patch (the product's own patch
// for the burst's Pods), with no lookup and no rule. HTTP/1.1 over TLS, the
// protocol the product speaks (-http2 offers HTTP/2 too). Loopback only.
package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

type review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *reviewRequest  `json:"request,omitempty"`
	Response   *reviewResponse `json:"response,omitempty"`
}

type reviewRequest struct {
	UID    string          `json:"uid"`
	Object json.RawMessage `json:"object"`
}

type reviewResponse struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     string `json:"patch,omitempty"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	cert := flag.String("cert", "", "tls.crt")
	key := flag.String("key", "", "tls.key")
	patchFile := flag.String("patch", "", "the JSON patch to answer with")
	http2 := flag.Bool("http2", false, "offer HTTP/2 as well (ALPN h2)")
	flag.Parse()
	if !strings.HasPrefix(*addr, "127.0.0.1:") {
		log.Fatal("loopback only")
	}
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
		var in review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 7<<20)).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var pod map[string]interface{}
		if err := json.Unmarshal(in.Request.Object, &pod); err != nil {
			http.Error(w, "bad object", http.StatusBadRequest)
			return
		}
		atomic.AddInt64(&answered, 1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
			Response: &reviewResponse{UID: in.Request.UID, Allowed: true, PatchType: "JSONPatch", Patch: patch}})
	})
	// Anything else (scheduling objects, the validating entries of the same registration): allowed.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 7<<20)).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
			Response: &reviewResponse{UID: in.Request.UID, Allowed: true}})
	})
	mux.HandleFunc("/answered", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]int64{"answered": atomic.LoadInt64(&answered)})
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 30 * time.Second,
		TLSConfig:   &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	if *http2 {
		srv.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
	}
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
