package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestServeDefaults checks that every listener defaults to a loopback
// addresses, so a server is not reachable from other machines unless asked.
func TestServeDefaults(t *testing.T) {
	cmd := newServeCmd(&modelOptions{}, io.Discard)
	for flag, want := range map[string]string{"addr": "127.0.0.1:8080", "admin-addr": "127.0.0.1:8081", "grpc-addr": "127.0.0.1:8001", "grpc-admin-addr": "127.0.0.1:8002", "version-policy": "latest:1"} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %q, want %q", flag, got, want)
		}
	}
}

// TestServeConfigErrors checks that invalid serve flags are all reported
// at once, before any model is opened.
func TestServeConfigErrors(t *testing.T) {
	o := &serveOptions{model: &modelOptions{model: "m", provider: "cpu", maxPixels: 1}, repository: "r", versionPolicy: "newest",
		addr: "127.0.0.1:9", adminAddr: "127.0.0.1:9", grpcAddr: "127.0.0.1:7", grpcAdminAddr: "127.0.0.1:7", maxBody: 0, maxBuffered: -1, maxConcurrent: 0,
		queueTimeout: time.Second, bodyTimeout: time.Second, readTimeout: time.Second, writeTimeout: time.Second}
	_, err := o.config(io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"one of the two", "--admin-addr 127.0.0.1:9: want an address other than --addr", "--grpc-admin-addr 127.0.0.1:7: want an address other than --grpc-addr", "--shutdown-timeout 0s", "--max-body 0", "--max-concurrent 0", `--version-policy: version policy "newest"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
