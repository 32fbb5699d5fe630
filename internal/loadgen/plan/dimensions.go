package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/jsoncodec"
	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/proxy"
	"github.com/meteorbench/meteorbench/internal/results"
)

// A planDimension is how the load generator reads one of
// results.Dimensions from a Config: the values a run sweeps, how Only
// narrows a config to one, how Settings records them and how Validate
// checks them.
type planDimension struct {
	// field names the dimension: its results.Dimension's Field.
	field string
	// values lists the dimension's values c measures scenario sc at, each
	// as what it sets on a condition, in the order they are measured. A
	// dimension a run does not sweep has one value.
	values func(c Config, sc api.Scenario) []func(*results.Condition)
	// option carries the cell's value of the dimension to the client it
	// opens (nil: the client needs nothing of it).
	option func(k results.Condition, o *call.Options)
	// settings records the sweep in s (nil: results.Settings has no field
	// for it).
	settings func(c Config, s *results.Settings)
	// validate reports the first bad value of the dimension in c, as one
	// line (Config.Validate); nil: none can be bad.
	validate func(c Config) error
}

// planDimensions is the plan's side of the results.Dimensions that need
// one (whose comment says how to add a dimension): those read from a
// Config field of their own. They come first in the order the plan walks
// the dimensions (planTable: these, then the dimensions declared in
// results.Dimensions alone), the first changing slowest and the last
// fastest, every combination like an odometer (plan.go). A dimension with
// a single value per run can go anywhere.
var planDimensions = []planDimension{
	{
		field: "rate_requested",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return one(func(k *results.Condition) { k.RateRequested = c.Rate })
		},
		settings: func(c Config, s *results.Settings) { s.Rate = c.Rate },
		validate: func(c Config) error {
			if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
				return fmt.Errorf("rate %v: must be a positive number of calls/s (or 0 for closed-loop)", c.Rate)
			}
			return nil
		},
	},
	{
		field: "server_cpus",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return one(func(k *results.Condition) { k.ServerCPUs = c.ServerCPUs })
		},
		validate: func(c Config) error {
			if c.ServerCPUs < 0 {
				return fmt.Errorf("server CPUs %d: must not be negative", c.ServerCPUs)
			}
			return nil
		},
	},
	{
		// The proxy next to the server's CPUs: the server, pinned or not,
		// is measured directly and behind each proxy (config.go).
		field: "proxy",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.proxies(), func(k *results.Condition, p string) { k.Proxy = unlessDefault(p, proxy.None) })
		},
		settings: func(c Config, s *results.Settings) { s.Proxies = sweepUnlessDefault(c.proxies(), proxy.None) },
		validate: func(c Config) error { return c.validateProxies() },
	},
	{
		field: "link",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.Links, func(k *results.Condition, l link.Spec) { k.Link = conditionLink(l) })
		},
		settings: func(c Config, s *results.Settings) { s.Links = c.settingsLinks() },
		validate: func(c Config) error {
			if i := slices.IndexFunc(c.Links, link.Spec.Impaired); i >= 0 && !c.OwnServer {
				return fmt.Errorf("link %s: loss, jitter and reordering need run's own server (no --target): the packet link runs it in a network namespace of its own; to a target, --link is a TCP relay, which loses nothing", c.Links[i])
			}
			return unique("link", c.linkNames())
		},
	},
	{
		field: "concurrency",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.Concurrency, func(k *results.Condition, n int) { k.Concurrency = n })
		},
		settings: func(c Config, s *results.Settings) { s.Concurrency = c.Concurrency },
		validate: func(c Config) error {
			for _, n := range c.Concurrency {
				if n < 1 {
					return fmt.Errorf("concurrency %d: must be at least 1", n)
				}
			}
			return nil
		},
	},
	{
		// Connections right after the concurrency: what spreading one
		// protocol's calls over more connections buys (gRPC's one
		// connection against REST's one per worker on a lossy link).
		field: "conns",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			if len(c.Connections) == 0 {
				return one(func(*results.Condition) {})
			}
			return each(c.Connections, func(k *results.Condition, n int) { k.Conns = n })
		},
		settings: func(c Config, s *results.Settings) {
			if len(c.Connections) == 1 {
				s.Connections = c.Connections[0]
			}
			if len(c.Connections) > 1 {
				s.ConnectionsSweep = c.Connections
			}
		},
		option: func(k results.Condition, o *call.Options) { o.Connections = k.Conns },
		validate: func(c Config) error {
			seen := map[int]bool{}
			for _, n := range c.Connections {
				if n < 1 {
					return fmt.Errorf("connections %d: must be at least 1", n)
				}
				if seen[n] {
					return fmt.Errorf("connections %d given twice", n)
				}
				seen[n] = true
			}
			return nil
		},
	},
	{
		field: "records",
		values: func(c Config, sc api.Scenario) []func(*results.Condition) {
			return each(recordsOf(c, sc), func(k *results.Condition, n int) { k.Records = n })
		},
		settings: func(c Config, s *results.Settings) { s.Records = c.Records },
		option:   func(k results.Condition, o *call.Options) { o.Records = k.Records },
		validate: func(c Config) error {
			seen := map[int]bool{}
			for _, n := range c.Records {
				if n < 1 || n > api.MaxRecords {
					return fmt.Errorf("records %d: must be in 1..%d", n, api.MaxRecords)
				}
				if seen[n] {
					return fmt.Errorf("records %d given twice", n)
				}
				seen[n] = true
			}
			return nil
		},
	},
	{
		field: "messages",
		values: func(c Config, sc api.Scenario) []func(*results.Condition) {
			return each(streamOnly(c.Messages, sc.IsStream()), func(k *results.Condition, n int) { k.Messages = n })
		},
		settings: func(c Config, s *results.Settings) { s.Messages = c.Messages },
		option:   func(k results.Condition, o *call.Options) { o.Messages = k.Messages },
		validate: func(c Config) error {
			// (With --endpoints the scenarios are the pairs' names.)
			if i := slices.IndexFunc(c.Scenarios, api.Scenario.IsStream); i >= 0 && c.Payload != nil && c.Endpoints == nil {
				return fmt.Errorf("scenario %s: the stream scenarios carry the meteorites, not --payload", c.Scenarios[i])
			}
			for _, n := range c.Messages {
				if n < 1 || n > api.MaxStreamMessages {
					return fmt.Errorf("messages %d: must be in 1..%d", n, api.MaxStreamMessages)
				}
			}
			return unique("messages", texts(c.Messages))
		},
	},
	{
		field: "feed_rate",
		values: func(c Config, sc api.Scenario) []func(*results.Condition) {
			return each(streamOnly(c.FeedRates, sc == api.Feed), func(k *results.Condition, r float64) { k.FeedRate = r })
		},
		settings: func(c Config, s *results.Settings) { s.FeedRates = c.FeedRates },
		option:   func(k results.Condition, o *call.Options) { o.FeedRate = k.FeedRate },
		validate: func(c Config) error {
			for _, r := range c.FeedRates {
				if !(r >= 0 && r <= api.MaxFeedRate) {
					return fmt.Errorf("feed-rate %v: must be in 0..%g records/s a stream (0: as fast as the client reads)", r, float64(api.MaxFeedRate))
				}
			}
			return unique("feed-rate", texts(c.FeedRates))
		},
	},
	{
		field: "compress",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.Compress, func(k *results.Condition, z string) { k.Compress = unlessDefault(z, CompressNone) })
		},
		settings: func(c Config, s *results.Settings) { s.Compress = sweepUnlessDefault(c.Compress, CompressNone) },
		option:   func(k results.Condition, o *call.Options) { o.Compress = k.Compress },
		validate: func(c Config) error { return validCompress(c.Compress) },
	},
	{
		// TLS late: a cell's plaintext and TLS conditions are measured
		// close together (every repeat of every protocol); only the
		// dimensions after it change faster.
		field: "tls",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			// Behind a proxy, always TLS: it ends there.
			if len(c.TLS) == 0 {
				return one(func(k *results.Condition) { k.TLS = k.Proxy != "" }) // plaintext
			}
			return each(c.TLS, func(k *results.Condition, on bool) { k.TLS = on || k.Proxy != "" })
		},
		validate: func(c Config) error { return c.validateTLS() }, // tls.go
	},
	{
		// The JSON codec inside TLS: a rest cell's codecs are measured one
		// after the other, next to its grpc and rest-protobuf cells; only
		// the engine changes faster.
		field: "json_codec",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.JSONCodecs, func(k *results.Condition, jc string) { k.JSONCodec = unlessDefault(jc, jsoncodec.Std) })
		},
		settings: func(c Config, s *results.Settings) { s.JSONCodecs = sweepUnlessDefault(c.JSONCodecs, jsoncodec.Std) },
		option:   func(k results.Condition, o *call.Options) { o.JSONCodec = k.JSONCodec },
		validate: func(c Config) error { return validJSONCodecs(c.JSONCodecs) },
	},
	{
		// The user's endpoints: one value, the pair's endpoints (or for a
		// mix of pairs, their file), on their cells.
		field: "endpoint",
		values: func(c Config, sc api.Scenario) []func(*results.Condition) {
			return one(func(k *results.Condition) {
				if c.Endpoints != nil {
					k.Endpoint = c.Endpoints.Name(sc)
				}
			})
		},
		validate: func(c Config) error { return c.validateEndpoints() }, // endpoints.go
	},
	{
		// One payload per run (--payload): the server serves one.
		field: "payload",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return one(func(k *results.Condition) { k.Payload = c.PayloadID() }) // payload.go
		},
	},
	{
		field: "traffic",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return one(func(k *results.Condition) { k.Mix = c.Mix.String() })
		},
		settings: func(c Config, s *results.Settings) { s.Mix = c.Mix.String() },
		validate: func(c Config) error { return c.validateMix() }, // mix.go
	},
	{
		// The engine last of planDimensions: a cell's engines are measured
		// one after the other, every repeat.
		field: "engine",
		values: func(c Config, _ api.Scenario) []func(*results.Condition) {
			return each(c.Engines, func(k *results.Condition, e string) { k.Engine = unlessDefault(e, lean.Standard) })
		},
		settings: func(c Config, s *results.Settings) { s.Engines = sweepUnlessDefault(c.Engines, lean.Standard) },
		validate: func(c Config) error { return validEngines(c) },
	},
}

// planTable is every dimension the plan walks: planDimensions, then one
// entry derived from each results.Dimensions entry with Values (a
// dimension declared there alone), in that table's order.
func planTable() []planDimension {
	out := slices.Clone(planDimensions)
	for _, rd := range results.Dimensions {
		if len(rd.Values) > 0 && !slices.ContainsFunc(out, func(d planDimension) bool { return d.field == rd.Field }) {
			out = append(out, sweptDimension(rd))
		}
	}
	return out
}

// sweptDimension is the plan's entry of a dimension declared by its
// results.Dimensions entry alone: its values are Config.Sweeps[Field]
// (none: the Default), each one of Values and given once, recorded in
// Settings.Sweeps unless only the Default ran, and carried to the client
// in call.Options.Settings[Field].
func sweptDimension(rd results.Dimension) planDimension {
	flag := strings.ReplaceAll(rd.Field, "_", "-")
	values := func(c Config) []string {
		if vs := c.Sweeps[rd.Field]; len(vs) > 0 {
			return vs
		}
		return []string{rd.Default}
	}
	return planDimension{
		field: rd.Field,
		values: func(c Config, sc api.Scenario) []func(*results.Condition) {
			vs := values(c)
			if rd.Scenarios != nil && !slices.Contains(rd.Scenarios, sc) {
				vs = []string{rd.Default} // measured at the default only
			}
			return each(vs, func(k *results.Condition, v string) { rd.Set(k, unlessDefault(v, rd.Default)) })
		},
		settings: func(c Config, s *results.Settings) {
			if vs := sweepUnlessDefault(values(c), rd.Default); vs != nil {
				if s.Sweeps == nil {
					s.Sweeps = map[string][]string{}
				}
				s.Sweeps[rd.Field] = vs
			}
		},
		validate: func(c Config) error {
			for _, v := range values(c) {
				if !slices.Contains(rd.Values, v) {
					return fmt.Errorf("%s: unknown value %q (want %s)", flag, v, format.Names(rd.Values))
				}
			}
			return unique(flag, values(c))
		},
		option: func(k results.Condition, o *call.Options) {
			v := rd.Get(k)
			if v == "" {
				v = rd.Default
			}
			if o.Settings == nil {
				o.Settings = map[string]string{}
			}
			o.Settings[rd.Field] = v
		},
	}
}

// ClientSettings sets in o what each dimension of cell condition k carries
// to the client (planDimension.option).
func ClientSettings(k results.Condition, o *call.Options) {
	for _, d := range planTable() {
		if d.option != nil {
			d.option(k, o)
		}
	}
}

// each is one setter per value.
func each[T any](values []T, set func(*results.Condition, T)) []func(*results.Condition) {
	out := make([]func(*results.Condition), len(values))
	for i, v := range values {
		out[i] = func(k *results.Condition) { set(k, v) }
	}
	return out
}

// unlessDefault is a value as a cell's condition (and the adapters'
// option) names it: "" for the dimension's default def, so keys and
// documents of runs that do not sweep the dimension stay as they were.
func unlessDefault(v, def string) string {
	if v == def {
		return ""
	}
	return v
}

// sweepUnlessDefault records a dimension's sweep in results.Settings: nil
// when it is only the default def, so documents of runs that do not sweep
// it stay as they were.
func sweepUnlessDefault(vs []string, def string) []string {
	if len(vs) == 0 || slices.Equal(vs, []string{def}) {
		return nil
	}
	return vs
}

// one is a single setter.
func one(set func(*results.Condition)) []func(*results.Condition) {
	return []func(*results.Condition){set}
}

// streamOnly is a stream dimension's values for a scenario it concerns
// (on): every one of vs; else, and when none was named, the default (the
// zero value) once.
func streamOnly[T comparable](vs []T, on bool) []T {
	if len(vs) == 0 || !on {
		return []T{*new(T)}
	}
	return vs
}

// texts are vs as text, for unique.
func texts[T any](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// recordsOf is the payload sizes a scenario is measured at: every one of
// c.Records, or just the unnamed default (0); small has no payload.
func recordsOf(c Config, sc api.Scenario) []int {
	if len(c.Records) == 0 || sc == api.Small || (sc.IsStream() && c.Endpoints == nil) {
		return []int{0}
	}
	return c.Records
}
