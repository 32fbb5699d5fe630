package session

import "github.com/meteorbench/meteorbench/internal/results"

const mib = 1 << 20

// serverMemory is the server's memory as a cell records it; nil when its
// /metrics did not say.
func serverMemory(s *ServerSample) *results.ServerMemory {
	if s == nil || s.RSS == 0 && s.Heap == 0 {
		return nil
	}
	return &results.ServerMemory{RSSMiB: s.RSS / mib, PeakRSSMiB: s.PeakRSS / mib, HeapMiB: s.Heap / mib}
}
