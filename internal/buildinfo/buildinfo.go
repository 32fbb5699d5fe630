// Package buildinfo names the versions every result and the server's
// /metrics carry, so a figure can always be traced to the code that made it.
package buildinfo

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"google.golang.org/grpc"
)

// version is set at link time by builds without VCS data (the Dockerfile):
// -ldflags "-X github.com/meteorbench/meteorbench/internal/buildinfo.version=v1.2.3".
var version string

// Version is meteorbench's version: the link-time version if set, else the
// module version when built from a tagged module, else the VCS revision
// (with "+dirty" for uncommitted changes), else "devel".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return rev + dirty
}

// GoVersion is the Go toolchain that built this binary.
func GoVersion() string { return runtime.Version() }

// GoExperiment is the GOEXPERIMENT the binary was built with ("" for none).
// It matters: GOEXPERIMENT=jsonv2 swaps encoding/json's engine.
func GoExperiment() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOEXPERIMENT" {
				return s.Value
			}
		}
	}
	return os.Getenv("GOEXPERIMENT")
}

// GRPCVersion is grpc-go's version.
func GRPCVersion() string { return grpc.Version }

// ModuleVersion returns the version of a dependency, or "" if it is not one.
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// CPUModel reads the processor's name from /proc/cpuinfo ("" elsewhere).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// KernelRelease reads the kernel's release ("" where unknown).
func KernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
