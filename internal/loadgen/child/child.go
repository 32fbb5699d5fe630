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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meteorbench/meteorbench/internal/addrfile"
)

// StartTimeout bounds the wait for the child's address file.
const StartTimeout = 15 * time.Second

// pollEvery is how often Start looks for the address file.
const pollEvery = 5 * time.Millisecond

// Server is a running child server.
type Server struct {
	// Addr is the address the child listens on, from the address file it
	// wrote (serve --addr-file).
	Addr string

	cmd    *exec.Cmd
	dir    string        // holds the address file; removed once the child is gone
	exited chan struct{} // closed once the child has been waited for
	err    error         // its exit status, once exited
	mu     sync.Mutex
	tail   []string // its last lines of stderr, for error messages
}

// Start runs exe with args (e.g. serve --addr 127.0.0.1:0) followed by
// --addr-file FILE, and extra environment variables, and waits for FILE:
// serve writes the address it bound there, atomically, once it listens
// (package addrfile). The child gets its own process group, so a Ctrl-C in
// the terminal reaches only the parent, which then stops the child itself
// (see Stop); on Linux it is also killed if the parent dies.
func Start(ctx context.Context, exe string, args []string, env []string) (*Server, error) {
	dir, err := os.MkdirTemp("", "meteorbench-child-*")
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	file := filepath.Join(dir, "addr")
	cmd := exec.Command(exe, append(slices.Clone(args), "--addr-file", file)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &Server{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() {
		// Wait only after stderr reached EOF (os/exec: Wait closes the
		// pipe), so the child's last words are in tail before exited is
		// closed and an error message can quote them.
		s.readStderr(stderr)
		s.err = cmd.Wait()
		os.RemoveAll(dir)
		close(s.exited)
	}()

	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		addr, _, err := addrfile.Read(file)
		switch {
		case err == nil:
			s.Addr = addr
			return s, nil
		case !errors.Is(err, fs.ErrNotExist):
			s.Stop(time.Second)
			return nil, fmt.Errorf("server's address file: %w", err)
		}
		select {
		case <-tick.C:
		case <-s.exited:
			return nil, fmt.Errorf("server exited before listening (%v)%s", s.err, s.lastLines())
		case <-timer.C:
			s.Stop(time.Second)
			return nil, fmt.Errorf("server wrote no address file within %v%s", StartTimeout, s.lastLines())
		case <-ctx.Done():
			s.Stop(time.Second)
			return nil, ctx.Err()
		}
	}
}

// readStderr drains the child's stderr (a full pipe would block it),
// remembering the last few lines for error messages.
func (s *Server) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s.mu.Lock()
		s.tail = append(s.tail, sc.Text())
		if len(s.tail) > 5 {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
	}
	io.Copy(io.Discard, r)
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
