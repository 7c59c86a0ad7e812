// loadgen: keep-alive HTTPS load for the service benchmark, standard library
// only. Closed loop (-concurrency N: N connections, each sends its next
// request when the last is answered) or open loop (-rate R: requests start at
// a fixed rate whatever the answers do, on a pool of connections). Stops after
// -duration or -requests. Prints one JSON object.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"
)

type result struct {
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Maxms       float64 `json:"max_ms"`
	Over100ms   int     `json:"over_100ms"`
	FirstError  string  `json:"first_error,omitempty"`
}

func main() {
	url := flag.String("url", "", "https://127.0.0.1:PORT/validate")
	caFile := flag.String("ca", "", "CA bundle")
	bodyFile := flag.String("body", "", "request body (JSON)")
	concurrency := flag.Int("concurrency", 8, "closed loop: connections")
	rate := flag.Float64("rate", 0, "open loop: requests per second (0: closed loop)")
	duration := flag.Duration("duration", 10*time.Second, "how long")
	maxRequests := flag.Int("requests", 0, "stop after this many (0: no limit)")
	warmup := flag.Duration("warmup", time.Second, "closed loop on every connection first, not measured")
	flag.Parse()

	ca, err := os.ReadFile(*caFile)
	check(err)
	body, err := os.ReadFile(*bodyFile)
	check(err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		check(fmt.Errorf("no certificate in %s", *caFile))
	}
	conns := *concurrency
	if *rate > 0 && conns < 64 {
		conns = 64
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: "localhost"},
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		ForceAttemptHTTP2:   false,
	}}

	var mu sync.Mutex
	var lat []time.Duration
	res := result{}
	one := func() {
		start := time.Now()
		resp, err := client.Post(*url, "application/json", bytes.NewReader(body))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		d := time.Since(start)
		mu.Lock()
		lat = append(lat, d)
		if err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
		}
		mu.Unlock()
	}

	// Warm up: open every connection the run may use (TLS handshakes are not what is measured).
	warmEnd := time.Now().Add(*warmup)
	var warm sync.WaitGroup
	for i := 0; i < conns; i++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for time.Now().Before(warmEnd) {
				if resp, err := client.Post(*url, "application/json", bytes.NewReader(body)); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	warm.Wait()

	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	started := time.Now()
	var sent int
	var sentMu sync.Mutex
	take := func() bool {
		sentMu.Lock()
		defer sentMu.Unlock()
		if (*maxRequests > 0 && sent >= *maxRequests) || time.Now().After(deadline) {
			return false
		}
		sent++
		return true
	}
	if *rate > 0 {
		interval := time.Duration(float64(time.Second) / *rate)
		next := time.Now()
		for take() {
			wg.Add(1)
			go func() { defer wg.Done(); one() }()
			next = next.Add(interval)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
	} else {
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for take() {
					one()
				}
			}()
		}
	}
	wg.Wait()
	res.Seconds = time.Since(started).Seconds()
	res.Requests = len(lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	if len(lat) > 0 {
		res.P50ms = ms(lat[len(lat)/2])
		res.P99ms = ms(lat[min(len(lat)-1, len(lat)*99/100)])
		res.Maxms = ms(lat[len(lat)-1])
		for _, d := range lat {
			if d > 100*time.Millisecond {
				res.Over100ms++
			}
		}
	}
	res.RPS = float64(res.Requests) / res.Seconds
	check(json.NewEncoder(os.Stdout).Encode(res))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
}
