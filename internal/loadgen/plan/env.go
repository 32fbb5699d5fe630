package plan

import (
	"runtime"
	"strings"

	"github.com/meteorbench/meteorbench/internal/buildinfo"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

// Env describes the machine and build the run was made with.
func (cfg Config) Env() results.Env {
	osName := runtime.GOOS
	if k := buildinfo.KernelRelease(); k != "" {
		osName += " " + k
	}
	return results.Env{
		MeteorbenchVersion: buildinfo.Version(),
		GoVersion:          buildinfo.GoVersion(),
		GoExperiment:       buildinfo.GoExperiment(),
		GRPCVersion:        buildinfo.GRPCVersion(),
		ProtobufVersion:    buildinfo.ModuleVersion("google.golang.org/protobuf"),
		JSONCodecs:         envJSONCodecs(cfg.WithDefaults()),
		GOMAXPROCS:         runtime.GOMAXPROCS(0),
		NumCPU:             runtime.NumCPU(),
		CPUModel:           buildinfo.CPUModel(),
		OS:                 strings.TrimSpace(osName),
		Arch:               runtime.GOARCH,
		Target:             cfg.Target.String(),
		Targets:            cfg.Target.ByProtocol(),
		ServerPID:          pidText(cfg.ServerPID),
		OwnServer:          cfg.OwnServer,
		Flags:              cfg.CommandLine,
		ServerCPUs:         cfg.ServerCPUList,
		ClientCPUs:         cfg.ClientCPUList,
		GOGC:               cfg.GOGC,
		LinkEmulator:       cfg.linkEmulator(),
		LinkFidelity:       cfg.LinkFidelity,
	}
}

// pidText is --server-pid as the document records it; "" when not given.
func pidText(p target.PIDs) string {
	if p.IsZero() {
		return ""
	}
	return p.String()
}

// linkEmulator names what carried the cells' links: "" without any.
func (cfg Config) linkEmulator() string {
	if cfg.Packet != nil {
		return results.LinkPacket
	}
	for _, l := range cfg.Links {
		if !l.None() {
			return results.LinkRelay
		}
	}
	return ""
}
