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

// mergeServerMemory is the largest of each memory figure over the repeats;
// nil when none has them.
func mergeServerMemory(cs []results.Cell) *results.ServerMemory {
	var out *results.ServerMemory
	for i := range cs {
		m := cs[i].ServerMemory
		if m == nil {
			continue
		}
		if out == nil {
			out = &results.ServerMemory{}
		}
		out.RSSMiB, out.PeakRSSMiB, out.HeapMiB = max(out.RSSMiB, m.RSSMiB), max(out.PeakRSSMiB, m.PeakRSSMiB), max(out.HeapMiB, m.HeapMiB)
	}
	return out
}
