package netns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepRemovesKilledRuns: a namespace named after a process that is
// gone (a run killed with SIGKILL) is removed by the next Sweep; this
// process's own stays until Remove.
func TestSweepRemovesKilledRuns(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("network namespaces not available here: %v", err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Prefix + strconv.Itoa(cmd.Process.Pid) + "-test"
	if _, err := Create(dead); err != nil {
		t.Fatal(err)
	}
	own, err := Create(Name("test"))
	if err != nil {
		t.Fatal(err)
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !exists(dead) {
		t.Logf("swept %v", removed)
	} else {
		(&NS{Name: dead}).Remove()
		t.Errorf("Sweep left %s (its process %d is gone); removed %v", dead, cmd.Process.Pid, removed)
	}
	if !exists(own.Name) {
		t.Fatalf("Sweep removed %s, this process's own", own.Name)
	}
	if err := own.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(own.Name) {
		t.Errorf("Remove left %s", own.Name)
	}
}

func exists(name string) bool {
	_, err := os.Stat(filepath.Join(Dir, name))
	return err == nil
}

func TestOpenRefusesOthers(t *testing.T) {
	for _, name := range []string{"", "other", "meteorbench-1/../x", "meteorbench-999999999-gone"} {
		if _, err := Open(name); err == nil {
			t.Errorf("Open(%q): no error", name)
		}
	}
}
