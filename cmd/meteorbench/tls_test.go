package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/results"
)

// run --tls with its own server: the child serves TLS with a self-signed
// certificate that run trusts; "--tls both" (a space, not "=") measures
// every cell plaintext, then over TLS.
func TestRunOwnServerTLS(t *testing.T) {
	bin := meteorbenchBinary(t)
	for _, mode := range [][]string{{"--tls"}, {"--tls", "both"}} {
		args := append([]string{"run", "--scenario", "small,large", "--proto", "rest,grpc", "--batch", "3", "--iterations", "2", "--warmup", "0", "--format", "json"}, mode...)
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := runBounded(t, cmd); err != nil {
			t.Fatalf("%v: %v\n%s", mode, err, stderr.String())
		}
		res, err := results.Read(&stdout)
		if err != nil {
			t.Fatal(err)
		}
		want := 4 * len(mode) // --tls: 4 TLS cells; --tls both: 4 plaintext + 4 TLS
		if len(res.Cells) != want {
			t.Fatalf("%v: %d cells, want %d", mode, len(res.Cells), want)
		}
		tlsCells := 0
		for _, c := range res.Cells {
			if c.Calls != 6 || c.Errors != 0 || c.ServerCPUUSPerCall == nil {
				t.Errorf("%v %s: %d calls, %d errors %v, server CPU %v", mode, c.Key(), c.Calls, c.Errors, c.ErrorExamples, c.ServerCPUUSPerCall)
			}
			if c.TLS {
				tlsCells++
				if c.TLSHandshakeUS == nil || !strings.HasSuffix(c.Key(), "/tls") {
					t.Errorf("%v %s: handshake %v", mode, c.Key(), c.TLSHandshakeUS)
				}
			}
		}
		if tlsCells != 4 {
			t.Errorf("%v: %d TLS cells, want 4", mode, tlsCells)
		}
		assertGone(t, res.Env.Target)
	}
}

func TestRunTLSBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--tls=maybe"},
		{"--tls-ca", "x.pem"},
		{"--tls", "--tls-insecure"}, // own server: nothing to skip
		{"--tls", "--target", "127.0.0.1:1", "--tls-ca", "x", "--tls-insecure"}, // exclusive
		{"--tls", "--target", "127.0.0.1:1", "--tls-ca", "/nonexistent.pem"},
	} {
		cmd := newRunCmd()
		cmd.SetArgs(args)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil {
			t.Errorf("run %v: no error", args)
		}
	}
}

func TestServeTLSBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert", "c.pem"},
		{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-self-signed"},
		{"--tls-cert-out", "c.pem"},
		{"--tls-host", "example.org"},
		{"--tls-allow-plaintext"},
		{"--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"},
	} {
		if code, _, stderr := runServeChild(t, append([]string{"--addr", "127.0.0.1:0"}, args...)...); code != 2 {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}
