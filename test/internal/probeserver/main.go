// Probeserver is the container that test/e2e's probe tests run: a tiny HTTP
// server whose health and readiness the test flips with files.
//
//	probeserver -port N [-delay D] [-healthy-file PATH] [-ready-file PATH]
//
// It waits -delay, then listens on 127.0.0.1:N (the address podward's
// probes use by default) and prints "listening on 127.0.0.1:N". /healthz
// answers 200 while -healthy-file exists, else 500; /ready answers 200
// while -ready-file exists, else 503; without the flag the answer is
// always 200. On SIGTERM or SIGINT it prints "stopping" and exits 0.
//
// It imports only the standard library; TestMain builds it next to podward.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "probeserver:", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.Int("port", 0, "the port to listen on, on 127.0.0.1")
	delay := flag.Duration("delay", 0, "how long to wait before listening")
	healthy := flag.String("healthy-file", "", "/healthz answers 200 while this file exists, else 500 (unset: always 200)")
	ready := flag.String("ready-file", "", "/ready answers 200 while this file exists, else 503 (unset: always 200)")
	flag.Parse()
	if *port <= 0 || *port > 65535 {
		return fmt.Errorf("-port %d: want a port in 1-65535", *port)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *delay > 0 {
		t := time.NewTimer(*delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			fmt.Println("stopping")
			return nil
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", fileStatus(*healthy, http.StatusInternalServerError))
	mux.HandleFunc("/ready", fileStatus(*ready, http.StatusServiceUnavailable))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Println("listening on", addr)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Println("stopping")
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// fileStatus answers 200 while file exists (or when file is ""), else bad.
func fileStatus(file string, bad int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if file != "" {
			if _, err := os.Stat(file); err != nil {
				http.Error(w, "no "+file, bad)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	}
}
