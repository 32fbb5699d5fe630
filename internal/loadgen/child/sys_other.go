//go:build !linux

package child

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal's
// SIGINT reaches only the parent.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
