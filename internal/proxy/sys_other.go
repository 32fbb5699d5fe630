//go:build !linux

package proxy

import "syscall"

// sysProcAttr puts the proxy in its own process group, so a terminal's
// SIGINT reaches only run, which stops it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
