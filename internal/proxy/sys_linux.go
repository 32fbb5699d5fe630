package proxy

import "syscall"

// sysProcAttr puts the proxy in its own process group (a terminal's SIGINT
// reaches only run, which stops it) and has the kernel end it if run dies
// without stopping it: SIGTERM, so that nginx's master ends its workers.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
