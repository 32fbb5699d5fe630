package lean

import (
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// grpcCheck is the full check of a scenario's gRPC answer (its
// length-prefixed messages): decoded with the generated code and validated
// with the call package's checks, as grpccall's callers validate theirs.
func grpcCheck(scenario api.Scenario, records int) (func([]byte) error, error) {
	want, err := call.Want(records)
	if err != nil {
		return nil, err
	}
	one := func(m proto.Message, ok func() error) func([]byte) error {
		return func(b []byte) error {
			_, err := frames(b, func(msg []byte) error {
				if err := proto.Unmarshal(msg, m); err != nil {
					return call.Invalid("decode: %v", err)
				}
				return ok()
			})
			return err
		}
	}
	switch scenario {
	case api.Small:
		var v pb.Version
		return one(&v, func() error { return call.CheckString(v.GetApiVersion(), data.Version) }), nil
	case api.Large:
		var l pb.MeteoriteLandingList
		return one(&l, func() error { return want.CheckMessages(l.GetMeteoriteLandings()) }), nil
	case api.Post:
		var st pb.StatusResponse
		return one(&st, func() error { return call.CheckString(st.GetStatus(), data.Success) }), nil
	}
	var m pb.MeteoriteLanding
	return func(b []byte) error {
		i := 0
		n, err := frames(b, func(msg []byte) error {
			if err := proto.Unmarshal(msg, &m); err != nil {
				return call.Invalid("decode record %d: %v", i, err)
			}
			i++
			return want.CheckID(i-1, m.GetId())
		})
		if err != nil {
			return err
		}
		return want.CheckCount(n)
	}, nil
}
