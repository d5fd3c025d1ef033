// apiserver-probe is the healthcheck of the kube-apiserver container in docker-compose.yml. The upstream
// image is distroless (no shell, no curl), so the check is this small static binary, copied in by
// Dockerfile.kube-apiserver.
//
//	apiserver-probe -url https://127.0.0.1:6443/readyz -ca /pki/ca.crt
//
// It exits 0 when the URL answers 200 over TLS verified against the CA, 1 otherwise (with one line on
// stderr saying why), 2 for a bad command line. /readyz needs no credentials: the API server's
// system:public-info-viewer role lets anyone read it.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "https://127.0.0.1:6443/readyz", "URL that must answer 200")
	caFile := flag.String("ca", "/pki/ca.crt", "PEM file of the CA that signed the server's certificate")
	timeout := flag.Duration("timeout", 3*time.Second, "how long the whole check may take")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "apiserver-probe: cannot use arguments %q: only flags (see -help)\n", flag.Args())
		os.Exit(2)
	}
	if err := check(*url, *caFile, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver-probe: %v\n", err)
		os.Exit(1)
	}
}

// check returns nil when url answers 200 over TLS verified against the CA in caFile.
func check(url, caFile string, timeout time.Duration) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("cannot read the CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("cannot use the CA %s: no PEM certificate in it", caFile)
	}
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	res, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot get 200 from %s: it answered %d: %s", url, res.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
