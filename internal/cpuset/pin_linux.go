package cpuset

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Available returns the CPUs this process may run on: the affinity mask
// (sched_getaffinity) of the calling thread, which is the process's as long
// as all its threads share one, as they do unless something pins only some
// of them (Pin pins all).
func Available() (Set, error) {
	var mask unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mask); err != nil {
		return Set{}, fmt.Errorf("reading the CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c <= MaxCPU; c++ {
		if mask.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return Set{cpus}, nil
}

// Pin restricts the whole process to the CPUs of s and sets GOMAXPROCS to
// s.Len(). sched_setaffinity acts on one thread, and a new thread inherits
// the mask of the thread that creates it, so Pin sets it on every thread
// listed in /proc/self/task, re-reading the list until a pass finds no
// thread it has not already pinned: any thread created after that was
// created by a pinned one.
//
// A CPU of s outside Available() is an *UnavailableError, and nothing is
// changed. If setting a thread's mask fails, the threads pinned so far stay
// pinned and the error is returned.
func Pin(s Set) error {
	avail, err := Available()
	if err != nil {
		return err
	}
	if err := check(s, avail); err != nil {
		return err
	}
	var mask unix.CPUSet
	mask.Zero()
	for _, c := range s.cpus {
		mask.Set(c)
	}
	pinned := make(map[int]bool)
	for {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if pinned[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, &mask); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it has exited
				return fmt.Errorf("pinning thread %d to CPUs %s: %w", tid, s, err)
			}
			pinned[tid] = true
		}
		if fresh == 0 {
			break
		}
	}
	runtime.GOMAXPROCS(s.Len())
	return nil
}

// threads lists the thread ids of this process.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing this process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
