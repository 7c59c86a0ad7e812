// Package webhookserver is what the benchmarks' Go reference webhooks share:
// the AdmissionReview envelope, the flags every one of them takes, a bounded
// decode, and HTTPS on loopback only (TLS 1.2+, HTTP/1.1 as the product speaks).
package webhookserver

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strings"
	"time"
)

// MaxBody is the product's default server.maxBodyBytes.
const MaxBody = 7 << 20

// Review is an AdmissionReview whose request object decodes into O.
type Review[O any] struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Request    *Request[O] `json:"request,omitempty"`
	Response   *Response   `json:"response,omitempty"`
}

type Request[O any] struct {
	UID    string `json:"uid"`
	Object O      `json:"object"`
}

type Response struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     string `json:"patch,omitempty"`
}

// Flags are the flags of every server: where it listens and with which certificate.
type Flags struct {
	addr, cert, key *string
	http2           *bool
}

// ServerFlags registers -addr, -cert, -key and -http2; call flag.Parse afterwards.
func ServerFlags() *Flags {
	return &Flags{
		addr:  flag.String("addr", "127.0.0.1:0", "listen address (loopback)"),
		cert:  flag.String("cert", "", "tls.crt"),
		key:   flag.String("key", "", "tls.key"),
		http2: flag.Bool("http2", false, "offer HTTP/2 as well (ALPN h2)"),
	}
}

// Decode reads the review within MaxBody; on a bad one it answers 400 and returns nil.
func Decode[O any](w http.ResponseWriter, r *http.Request) *Request[O] {
	var in Review[O]
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return nil
	}
	return in.Request
}

// Answer writes the review's response.
func Answer(w http.ResponseWriter, response Response) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(Review[struct{}]{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
		Response: &response})
}

// Serve serves handler over TLS until the process ends; it refuses any address but loopback.
func (f *Flags) Serve(handler http.Handler) {
	if !strings.HasPrefix(*f.addr, "127.0.0.1:") {
		log.Fatal("loopback only")
	}
	protocols := []string{"http/1.1"}
	if *f.http2 {
		protocols = []string{"h2", "http/1.1"}
	}
	srv := &http.Server{Addr: *f.addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 30 * time.Second,
		TLSConfig:   &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: protocols}}
	log.Fatal(srv.ListenAndServeTLS(*f.cert, *f.key))
}
