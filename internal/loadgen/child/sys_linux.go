package child

import "syscall"

// sysProcAttr puts the child in its own process group (a terminal's SIGINT
// reaches only the parent) and has the kernel kill it if the parent dies
// without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
