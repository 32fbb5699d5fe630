// Package child runs `meteorbench serve` as a child process for `run`
// without --target: server and load generator then have separate runtimes,
// schedulers and CPU accounting, as they would on two machines.
package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds the wait for the child's start-up line.
const StartTimeout = 15 * time.Second

// startMarker precedes the bound address in the start-up line:
// "meteorbench serve: listening on 127.0.0.1:41234 (REST ... gRPC ...)".
const startMarker = "listening on "

// Server is a running child server.
type Server struct {
	// Addr is the address the child listens on, from its start-up line.
	Addr string

	cmd    *exec.Cmd
	exited chan struct{} // closed once the child has been waited for
	err    error         // its exit status, once exited
	mu     sync.Mutex
	tail   []string // its last lines of stderr, for error messages
}

// Start runs exe with args (e.g. serve --addr 127.0.0.1:0) and extra
// environment variables, and waits for its start-up line on stderr. The
// child gets its own process group, so a Ctrl-C in the terminal reaches
// only the parent, which then stops the child itself (see Stop); on Linux
// it is also killed if the parent dies.
func Start(ctx context.Context, exe string, args []string, env []string) (*Server, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &Server{cmd: cmd, exited: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		// Wait only after stderr reached EOF (os/exec: Wait closes the
		// pipe), so the child's last words are in tail before exited is
		// closed and an error message can quote them.
		s.readStderr(stderr, addrc)
		s.err = cmd.Wait()
		close(s.exited)
	}()

	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case addr := <-addrc:
		s.Addr = addr
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("server exited before listening (%v)%s", s.err, s.lastLines())
	case <-timer.C:
		s.Stop(time.Second)
		return nil, fmt.Errorf("server printed no start-up line within %v%s", StartTimeout, s.lastLines())
	case <-ctx.Done():
		s.Stop(time.Second)
		return nil, ctx.Err()
	}
}

// readStderr finds the start-up line, then keeps draining stderr (a full
// pipe would block the child) while remembering the last few lines.
func (s *Server) readStderr(r io.Reader, addrc chan<- string) {
	sc := bufio.NewScanner(r)
	found := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.tail = append(s.tail, line)
		if len(s.tail) > 5 {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
		if !found {
			if addr, ok := ParseStartLine(line); ok {
				found = true
				addrc <- addr
			}
		}
	}
	io.Copy(io.Discard, r)
}

// ParseStartLine returns the address of a serve start-up line.
func ParseStartLine(line string) (addr string, ok bool) {
	_, rest, found := strings.Cut(line, startMarker)
	if !found {
		return "", false
	}
	addr, _, _ = strings.Cut(rest, " ")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", false
	}
	return addr, true
}

func (s *Server) lastLines() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tail) == 0 {
		return ""
	}
	return ": " + strings.Join(s.tail, " | ")
}

// Exited is closed when the child has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop asks the child to stop (SIGTERM), waits up to grace for it to drain
// and exit, then kills it. It returns once the child is gone and is safe to
// call more than once.
func (s *Server) Stop(grace time.Duration) error {
	select {
	case <-s.exited:
		return s.exitErr()
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-s.exited:
		return s.exitErr()
	case <-timer.C:
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("server did not stop within %v after SIGTERM: killed", grace)
	}
}

// exitErr is nil for a clean exit (status 0, or the SIGTERM we sent).
func (s *Server) exitErr() error {
	var ee *exec.ExitError
	if s.err == nil {
		return nil
	}
	if errors.As(s.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return fmt.Errorf("server: %w%s", s.err, s.lastLines())
}
