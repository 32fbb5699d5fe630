// Package loadgen is the load generator behind `meteorbench run`,
// `capacity` and `fit`: its code lives in the packages below, each one
// role, and data flows one way through them:
//
//	plan      Config (what to measure: scenarios, protocols, every
//	          dimension's values), validated; the plan expands it into
//	          cells (a results.CellKey each: scenario × protocol × batch ×
//	          condition), and the engine registry says which client a cell
//	          is called with.
//	session   one measuring session of a target: its health, contract
//	          probe and /metrics, checked once; Run measures a plan's cells
//	          in order, Measure(ctx, key, bounds) one cell by its key: the
//	          client over counted connections (wire), the server's counters
//	          read around the phase.
//	summary   a measured phase as a cell's figures, its self-checks,
//	          whether the generator was the bottleneck, and its repeats
//	          merged (medians, intervals).
//	engine    the calls of one cell: workers in closed or open loop
//	          (pace), each call one record into a tally (HDR histograms,
//	          counters, no samples), merged when the phase ends.
//	call, restcall, grpccall, lean, endpointcall
//	          the protocol adapters, one client per protocol and engine;
//	          wire counts bytes, pace paces open loops, child starts a
//	          server process, loadgentest has test servers.
//
//	plan ──▶ cells ──▶ workers ──▶ per-call records ──▶ tallies ──▶ results.Cell ──▶ reporters
package loadgen
