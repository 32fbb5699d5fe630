package cpuset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/meteorbench/meteorbench/internal/testproc"
)

// pinChildEnv makes the test binary, re-run, a child that pins itself to
// the CPU list in it (see TestPinHelperProcess).
const pinChildEnv = "CPUSET_TEST_PIN_CHILD"

// TestPinHelperProcess is not a test: run with $CPUSET_TEST_PIN_CHILD set,
// it starts threads that are locked and idle (as the Go runtime's own
// threads may be), pins the process, starts more threads, writes
// "pinned GOMAXPROCS=N" and waits for its standard input to close, so that
// the parent can read its threads' masks from outside.
func TestPinHelperProcess(t *testing.T) {
	list := testproc.ChildEnv(t, pinChildEnv, "TestPin")
	s, err := Parse(list)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	release := make(chan struct{})
	lockedThreads := func(n int) {
		started := make(chan struct{})
		for range n {
			go func() {
				runtime.LockOSThread() // this goroutine owns its thread until it exits
				started <- struct{}{}
				<-release
			}()
		}
		for range n {
			<-started
		}
	}
	lockedThreads(4)
	if err := Pin(s); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	lockedThreads(2)
	fmt.Printf("pinned GOMAXPROCS=%d\n", runtime.GOMAXPROCS(0))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	close(release)
	os.Exit(0)
}

// TestPin pins a child process to one CPU and checks, from outside, that
// the process and every one of its threads may run only there, and that
// GOMAXPROCS is 1.
func TestPin(t *testing.T) {
	avail, err := Available()
	if err != nil {
		t.Fatal(err)
	}
	for _, cpu := range []int{avail.CPUs()[0], avail.CPUs()[avail.Len()-1]} {
		t.Run(strconv.Itoa(cpu), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testproc.HangGuard)
			defer cancel()
			cmd := testproc.Child(ctx, "TestPinHelperProcess", pinChildEnv+"="+strconv.Itoa(cpu))
			stdin, stdout := testproc.StartPiped(t, cmd)
			defer func() {
				stdin.Close()
				_ = cmd.Wait()
			}()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "pinned GOMAXPROCS=1\n" {
				t.Fatalf("child said %q (%v), want \"pinned GOMAXPROCS=1\"", line, err)
			}
			pid := cmd.Process.Pid
			want := strconv.Itoa(cpu)
			if got := testproc.CPUsAllowed(t, testproc.Status(pid)); got != want {
				t.Errorf("process %d: Cpus_allowed_list %q, want %q", pid, got, want)
			}
			tasks, err := testproc.ThreadStatuses(pid)
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) < 7 { // the main thread and the 6 locked ones, at least
				t.Errorf("child has %d threads, want at least 7", len(tasks))
			}
			for _, st := range tasks {
				if got := testproc.CPUsAllowed(t, st); got != want {
					t.Errorf("%s: Cpus_allowed_list %q, want %q", st, got, want)
				}
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	avail, err := Available()
	if err != nil {
		t.Fatal(err)
	}
	if want := testproc.CPUsAllowed(t, "/proc/self/status"); avail.String() != want {
		t.Errorf("Available() = %q, /proc/self/status says %q", avail, want)
	}
	if avail.Len() < runtime.GOMAXPROCS(0) && os.Getenv("GOMAXPROCS") == "" {
		t.Logf("Available() = %q but GOMAXPROCS is %d", avail, runtime.GOMAXPROCS(0))
	}
}

// TestPinUnavailable: a CPU the process may not use is refused before
// anything changes (safe to run in the test process itself).
func TestPinUnavailable(t *testing.T) {
	avail, err := Available()
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.GOMAXPROCS(0)
	last := avail.CPUs()[avail.Len()-1]
	if last == MaxCPU {
		t.Skip("every CPU number is available")
	}
	err = Pin(Of(avail.CPUs()[0], last+1))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.CPU != last+1 {
		t.Fatalf("Pin(%d) = %v, want an *UnavailableError", last+1, err)
	}
	if want := fmt.Sprintf("cpu %d is not available: this process may use %s", last+1, avail); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if now, _ := Available(); !now.Equal(avail) || runtime.GOMAXPROCS(0) != before {
		t.Errorf("after a refused Pin: Available %q (was %q), GOMAXPROCS %d (was %d)", now, avail, runtime.GOMAXPROCS(0), before)
	}
	if err := Pin(Set{}); err == nil {
		t.Error("Pin(empty) = nil, want an error")
	}
}
