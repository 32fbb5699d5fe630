package data

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

// Proto converts a landing to the contract's message. Optional values stay
// absent; nothing is shared with l.
func (l *Landing) Proto() *pb.MeteoriteLanding {
	m := &pb.MeteoriteLanding{
		Id:       l.ID,
		Name:     l.Name,
		Fall:     l.Fall,
		Nametype: l.NameType,
		Recclass: l.RecClass,
		Mass:     copyFloat(l.Mass),
		Reclat:   copyFloat(l.RecLat),
		Reclong:  copyFloat(l.RecLong),
	}
	if l.Year != nil {
		m.Year = timestamppb.New(*l.Year)
	}
	if g := l.GeoLocation; g != nil {
		m.Geolocation = &pb.GeoLocation{Type: g.Type, Coordinates: append([]float64(nil), g.Coordinates...)}
	}
	return m
}

// FromProto converts a contract message back to a landing. It fails on a
// timestamp that is out of range or not normalised.
func FromProto(m *pb.MeteoriteLanding) (Landing, error) {
	l := Landing{
		ID:       m.GetId(),
		Name:     m.GetName(),
		Fall:     m.GetFall(),
		NameType: m.GetNametype(),
		RecClass: m.GetRecclass(),
		Mass:     copyFloat(m.Mass),
		RecLat:   copyFloat(m.Reclat),
		RecLong:  copyFloat(m.Reclong),
	}
	if m.Year != nil {
		if err := m.Year.CheckValid(); err != nil {
			return Landing{}, fmt.Errorf("landing %d: year: %w", m.GetId(), err)
		}
		t := m.Year.AsTime().In(time.UTC)
		l.Year = &t
	}
	if g := m.Geolocation; g != nil {
		l.GeoLocation = &GeoLocation{Type: g.GetType(), Coordinates: append([]float64(nil), g.GetCoordinates()...)}
	}
	return l, nil
}

// ProtoList converts landings to the list message.
func ProtoList(ls []Landing) *pb.MeteoriteLandingList {
	out := &pb.MeteoriteLandingList{MeteoriteLandings: make([]*pb.MeteoriteLanding, len(ls))}
	for i := range ls {
		out.MeteoriteLandings[i] = ls[i].Proto()
	}
	return out
}

func copyFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}
