package lean

import (
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/payload"
)

// grpcPath is a scenario's method: the meteorites' service's, or the
// user's payload's (meteorbench.payload.Payload, the same method names);
// "" for an unknown scenario.
func grpcPath(scenario api.Scenario, ofPayload bool) string {
	if ofPayload {
		name := map[api.Scenario]string{
			api.Small: api.MethodGetVersion, api.Large: api.MethodGetLargePayloadAsList,
			api.Stream: api.MethodGetLargePayload, api.Post: api.MethodPostLargePayload,
		}[scenario]
		if name == "" {
			return ""
		}
		return "/" + payload.ServiceName + "/" + name
	}
	return map[api.Scenario]string{
		api.Small:  pb.MeteoriteLandingsService_GetVersion_FullMethodName,
		api.Large:  pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
		api.Stream: pb.MeteoriteLandingsService_GetLargePayload_FullMethodName,
		api.Post:   pb.MeteoriteLandingsService_PostLargePayload_FullMethodName,
	}[scenario]
}

// grpcRequest is a scenario's request message (empty but for the post's
// upload: o.Records records, or the payload's items) and the full check of
// its answer: the meteorites' (grpcCheck) or the user's payload's
// (payloadCheck), as grpccall's callers send and validate theirs.
func grpcRequest(scenario api.Scenario, o call.Options) (body []byte, check func([]byte) error, err error) {
	if p := o.Payload; p != nil {
		check = payloadCheck(scenario, p, o.Records)
		if scenario == api.Post {
			body, err = (&payload.List{P: p, Items: p.Items(o.Records)}).AppendProto(nil)
		}
		return body, check, err
	}
	if check, err = grpcCheck(scenario, o.Records); err != nil {
		return nil, nil, err
	}
	if scenario == api.Post {
		var ls []data.Landing
		if ls, err = data.LandingsN(call.Size(o.Records)); err == nil {
			body, err = proto.Marshal(data.ProtoList(ls))
		}
	}
	return body, check, err
}

// payloadCheck is the full check of a scenario's gRPC answer when the
// target serves the user's payload p: its items decoded by the payload's
// compiled codec and checked against the sample, as grpccall's payload
// callers check theirs.
func payloadCheck(scenario api.Scenario, p *payload.Payload, records int) func([]byte) error {
	want := call.Expect(call.PayloadSize(p, records))
	status := func(m proto.Message, get func() string, w string) func([]byte) error {
		return func(b []byte) error {
			_, err := frames(b, func(msg []byte) error {
				if err := proto.Unmarshal(msg, m); err != nil {
					return call.Invalid("decode: %v", err)
				}
				return call.CheckString(get(), w)
			})
			return err
		}
	}
	switch scenario {
	case api.Small:
		var v pb.Version
		return status(&v, v.GetApiVersion, data.Version)
	case api.Post:
		var st pb.StatusResponse
		return status(&st, st.GetStatus, data.Success)
	case api.Large:
		return func(b []byte) error {
			_, err := frames(b, func(msg []byte) error {
				items, err := p.DecodeList(msg)
				if err != nil {
					return call.Invalid("decode: %v", err)
				}
				if err := want.CheckCount(items.Len()); err != nil {
					return err
				}
				if err := items.Check(); err != nil {
					return call.Invalid("%v", err)
				}
				return nil
			})
			return err
		}
	}
	return func(b []byte) error {
		i := 0
		n, err := frames(b, func(msg []byte) error {
			v, err := p.DecodeItem(msg)
			if err != nil {
				return call.Invalid("decode item %d: %v", i, err)
			}
			if err := p.CheckItem(i, v); err != nil {
				return call.Invalid("%v", err)
			}
			i++
			return nil
		})
		if err != nil {
			return err
		}
		return want.CheckCount(n)
	}
}

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
