package session

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// --server-pid P1+P2 sums the processes' CPU and memory (a user's proxy
// and the server behind it).
func TestProcSamplerSums(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(300 * time.Millisecond)
	self, other := os.Getpid(), cmd.Process.Pid
	a, err := ProcCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ProcCPU(other)
	if err != nil {
		t.Fatal(err)
	}
	one, err := (&procSampler{pids: []int{self}}).sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	both, err := (&procSampler{pids: []int{self, other}}).sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// CPU only grows: the sum read after is at least the parts read before.
	if both.CPU < a+b || both.RSS <= one.RSS {
		t.Errorf("sum of %d and %d: CPU %v (parts before: %v + %v), RSS %v (one: %v)", self, other, both.CPU, a, b, both.RSS, one.RSS)
	}
	if one.MetricsCPU != -1 || both.Source != "proc" {
		t.Errorf("sample %+v", both)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := (&procSampler{pids: []int{self, other}}).sample(context.Background()); err == nil {
		t.Error("a process gone: no error")
	}
}
