package lean

import "github.com/meteorbench/meteorbench/internal/loadgen/call"

func newGRPC(o call.Options) call.Client { return nil }
