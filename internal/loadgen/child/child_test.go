package child

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/addrfile"
)

// The test binary doubles as the child: with childModeEnv set, TestMain
// behaves as a tiny server instead of running tests.
const childModeEnv = "CHILD_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(childModeEnv) {
	case "":
		os.Exit(m.Run())
	case "serve", "ignore-term":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		term := make(chan os.Signal, 1)
		if os.Getenv(childModeEnv) == "ignore-term" {
			signal.Ignore(syscall.SIGTERM) // never stops on its own
		} else {
			signal.Notify(term, syscall.SIGTERM)
		}
		fmt.Fprintln(os.Stderr, "some noise first")
		// As serve does: the address file, the last argument.
		if err := addrfile.Write(os.Args[len(os.Args)-1], ln.Addr().String(), false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		<-term
		os.Exit(0)
	case "die":
		fmt.Fprintln(os.Stderr, "serve: listen tcp: address already in use")
		os.Exit(1)
	}
}

func start(t *testing.T, mode string) (*Server, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), exe, []string{"-test.run=^$"}, []string{childModeEnv + "=" + mode})
	if s != nil {
		t.Cleanup(func() { s.Stop(time.Second) })
	}
	return s, err
}

func TestStartReadsAddressAndStops(t *testing.T) {
	s, err := start(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatalf("child's address %s: %v", s.Addr, err)
	}
	c.Close()
	if err := s.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop = %v, want a clean exit", err)
	}
	select {
	case <-s.Exited():
	default:
		t.Error("child still running after Stop")
	}
	if err := s.Stop(time.Second); err != nil {
		t.Errorf("second Stop = %v", err)
	}
}

func TestStopKillsAChildIgnoringSIGTERM(t *testing.T) {
	s, err := start(t, "ignore-term")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop = %v, want a 'killed' error", err)
	}
	select {
	case <-s.Exited():
	default:
		t.Error("child still running after Stop")
	}
}

func TestStartReportsAChildThatDies(t *testing.T) {
	_, err := start(t, "die")
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start = %v, want the child's last stderr line in the error", err)
	}
}
