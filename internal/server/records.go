package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// The payload size: the list and stream calls answer N records, N from
// ?records=N (REST) or metadata meteorbench-records: N (gRPC), 1..MaxRecords,
// api.DefaultRecords when absent.
//
// What is cached is the typed records, never encoded bytes: every answer is
// still serialised for its request, so the server's CPU per call stays the
// cost of encoding N records (the point of the benchmark), and the default
// answer takes exactly the path it took before N existed. Answers of up to
// 1000 records are prefixes of the embedded records. Longer ones are prefixes
// of one generated sequence of MaxRecords records, built on the first request
// for more than 1000 and kept: its records share every pointer (strings,
// optional numbers, geolocation, timestamp) with the embedded ones and differ
// only in their id, so it costs about 28 MB (112 B a Landing plus 168 B a
// message) however many sizes are asked for, and serving any N allocates only
// the encoding.

// generated is the sequence answers of more than data.Count records are cut
// from.
type generated struct {
	landings []data.Landing         // REST JSON
	msgs     []*pb.MeteoriteLanding // protobuf: REST and gRPC
	backing  []pb.MeteoriteLanding  // the messages past the embedded ones
}

// buildGenerated builds the full MaxRecords sequence from the server's
// embedded records: the same values, the same pointers, new ids.
func buildGenerated(base []data.Landing, baseMsgs []*pb.MeteoriteLanding) (*generated, error) {
	if len(base) != data.Count || len(baseMsgs) != data.Count {
		return nil, fmt.Errorf("server: %d records, %d messages; want %d", len(base), len(baseMsgs), data.Count)
	}
	g := &generated{
		landings: make([]data.Landing, api.MaxRecords),
		msgs:     make([]*pb.MeteoriteLanding, api.MaxRecords),
		backing:  make([]pb.MeteoriteLanding, api.MaxRecords-data.Count),
	}
	copy(g.landings, base)
	copy(g.msgs, baseMsgs)
	for i := data.Count; i < api.MaxRecords; i++ {
		l, err := data.Generated(base, i)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		g.landings[i] = l
		b := baseMsgs[i%data.Count]
		m := &g.backing[i-data.Count]
		m.Id = l.ID
		m.Name, m.Fall, m.Nametype, m.Recclass = b.Name, b.Fall, b.Nametype, b.Recclass
		m.Geolocation, m.Mass, m.Reclat, m.Reclong, m.Year = b.Geolocation, b.Mass, b.Reclat, b.Reclong, b.Year
		g.msgs[i] = m
	}
	return g, nil
}

// records returns the n-record answer (1 <= n <= MaxRecords) in both forms,
// read-only. The default is the server's own records, unchanged.
func (s *Server) records(n int) ([]data.Landing, []*pb.MeteoriteLanding, error) {
	if n <= data.Count {
		return s.landings[:n], s.list.MeteoriteLandings[:n], nil
	}
	g, err := s.generated()
	if err != nil {
		return nil, nil, err
	}
	return g.landings[:n], g.msgs[:n], nil
}

// listMessage returns the n-record list message: the server's own for the
// default, a new wrapper around shared records otherwise.
func (s *Server) listMessage(n int) (*pb.MeteoriteLandingList, error) {
	if n == data.Count {
		return s.list, nil
	}
	_, msgs, err := s.records(n)
	if err != nil {
		return nil, err
	}
	return &pb.MeteoriteLandingList{MeteoriteLandings: msgs}, nil
}

func newGeneratedOnce(s *Server) func() (*generated, error) {
	return sync.OnceValues(func() (*generated, error) {
		return buildGenerated(s.landings, s.list.MeteoriteLandings)
	})
}

// errRecordsTwice is the answer to a size given more than once.
var errRecordsTwice = errors.New("given more than once")

// parseRecordCount reads a size: decimal digits only (no sign, exponent,
// spaces or base prefix), from 1 to MaxRecords.
func parseRecordCount(v string) (int, error) {
	bad := fmt.Errorf("%q is not a whole number from 1 to %d", v, api.MaxRecords)
	if v == "" || len(v) > 16 {
		return 0, bad
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > api.MaxRecords {
		return 0, bad
	}
	return n, nil
}

// queryRecords reads ?records=N from a raw query: DefaultRecords when it is
// absent; an error when it is malformed, out of range or repeated. Other
// parameters are ignored, as they always were.
func queryRecords(raw string) (int, error) { return queryRecordsOr(raw, api.DefaultRecords) }

// queryRecordsOr is queryRecords with def when the size is absent (a
// payload's own number of items).
func queryRecordsOr(raw string, def int) (int, error) {
	n, found := def, false
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != api.QueryRecords {
			if uk, err := url.QueryUnescape(k); err != nil || uk != api.QueryRecords {
				continue
			}
		}
		if found {
			return 0, fmt.Errorf("query parameter %s: %w", api.QueryRecords, errRecordsTwice)
		}
		found = true
		uv, err := url.QueryUnescape(v)
		if err != nil {
			return 0, fmt.Errorf("query parameter %s: %q is not a whole number from 1 to %d", api.QueryRecords, v, api.MaxRecords)
		}
		if n, err = parseRecordCount(uv); err != nil {
			return 0, fmt.Errorf("query parameter %s: %w", api.QueryRecords, err)
		}
	}
	return n, nil
}

// grpcRecords reads metadata meteorbench-records: N, as queryRecords does
// the query; its error is codes.InvalidArgument.
func grpcRecords(ctx context.Context) (int, error) { return grpcRecordsOr(ctx, api.DefaultRecords) }

// grpcRecordsOr is grpcRecords with def when the size is absent.
func grpcRecordsOr(ctx context.Context, def int) (int, error) {
	vs := metadata.ValueFromIncomingContext(ctx, api.MetadataRecords)
	switch len(vs) {
	case 0:
		return def, nil
	case 1:
		n, err := parseRecordCount(vs[0])
		if err != nil {
			return 0, status.Errorf(codes.InvalidArgument, "metadata %s: %v", api.MetadataRecords, err)
		}
		return n, nil
	}
	return 0, status.Errorf(codes.InvalidArgument, "metadata %s: %v", api.MetadataRecords, errRecordsTwice)
}
