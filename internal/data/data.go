// Package data holds the embedded data set: 1000 NASA meteorite landings,
// parsed once, on first use, into typed records, with their conversions to the protobuf
// messages of the contract and to the REST JSON shape.
package data

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
)

//go:embed meteorites.json
var sourceJSON []byte

// Count is the number of records in the embedded data set.
const Count = 1000

// The fixed answers of the small and the upload calls.
const (
	Version = "API Version 1.0"
	Success = "SUCCESS"
)

// Landing is one meteorite landing. It is also the REST JSON shape: NASA's
// field names, numbers as numbers, and missing values (nil) left out.
type Landing struct {
	ID          uint32       `json:"id"`
	Name        string       `json:"name"`
	NameType    string       `json:"nametype"`
	RecClass    string       `json:"recclass"`
	Mass        *float64     `json:"mass,omitempty"`
	Fall        string       `json:"fall"`
	Year        *time.Time   `json:"year,omitempty"`
	RecLat      *float64     `json:"reclat,omitempty"`
	RecLong     *float64     `json:"reclong,omitempty"`
	GeoLocation *GeoLocation `json:"geolocation,omitempty"`
}

// GeoLocation is a GeoJSON point: Coordinates is [longitude, latitude].
type GeoLocation struct {
	Type        string    `json:"type"`
	Coordinates []float64 `json:"coordinates"`
}

// sourceLanding is a record as the SODA API wrote it: the numbers and the
// year as strings, declared here over Landing's fields of the same names;
// the others (name, nametype, recclass, fall, geolocation) are written as
// Landing has them. Unknown keys (the Socrata :@computed_region_* ones) are
// ignored.
type sourceLanding struct {
	Landing
	ID      string  `json:"id"`
	Mass    *string `json:"mass"`
	Year    *string `json:"year"`
	RecLat  *string `json:"reclat"`
	RecLong *string `json:"reclong"`
}

// parsed is the embedded file, parsed and validated on first use (not at
// package init, so a program that never needs the records never pays for
// them). Its records are never handed out: every accessor copies.
var parsed = sync.OnceValues(func() ([]Landing, error) { return Parse(sourceJSON) })

// Landings returns the parsed data set, in the file's order: a deep copy
// that the caller owns and may modify. Parsing happens once, on the first
// call of any accessor. It is LandingsN(Count): the file holds exactly Count
// records (Parse checks it), and the first Count ids are the file's own.
func Landings() ([]Landing, error) { return LandingsN(Count) }

// MustLandings is Landings for callers that cannot go on without the data set.
// The embedded file is checked by the package's tests, so it never panics in a
// built binary.
func MustLandings() []Landing {
	ls, err := Landings()
	if err != nil {
		panic(err)
	}
	return ls
}

// IDs returns the records' ids in the file's order (a fresh slice), for
// callers that validate answers and need nothing else: IDsN(Count).
func IDs() ([]uint32, error) { return IDsN(Count) }

// Source returns a copy of the embedded file as shipped (245,975 bytes).
func Source() []byte { return bytes.Clone(sourceJSON) }

// Clone returns a deep copy of l: nothing it points to is shared with l.
func (l *Landing) Clone() Landing {
	c := *l
	c.Mass = copyFloat(l.Mass)
	c.RecLat = copyFloat(l.RecLat)
	c.RecLong = copyFloat(l.RecLong)
	if l.Year != nil {
		y := *l.Year
		c.Year = &y
	}
	if g := l.GeoLocation; g != nil {
		c.GeoLocation = &GeoLocation{Type: g.Type, Coordinates: append([]float64(nil), g.Coordinates...)}
	}
	return c
}

// Parse decodes a file in the SODA format and validates it: exactly Count
// records, unique non-zero ids below IDOffset, names present, numbers and dates well formed.
func Parse(src []byte) ([]Landing, error) {
	var raw []sourceLanding
	if err := json.Unmarshal(src, &raw); err != nil {
		return nil, fmt.Errorf("data: decode: %w", err)
	}
	if len(raw) != Count {
		return nil, fmt.Errorf("data: %d records, want %d", len(raw), Count)
	}
	out := make([]Landing, len(raw))
	seen := make(map[uint32]int, len(raw))
	for i, r := range raw {
		l, err := r.landing()
		if err != nil {
			return nil, fmt.Errorf("data: record %d (id %q): %w", i, r.ID, err)
		}
		if j, dup := seen[l.ID]; dup {
			return nil, fmt.Errorf("data: record %d: id %d repeats record %d", i, l.ID, j)
		}
		seen[l.ID] = i
		out[i] = l
	}
	return out, nil
}

func (r sourceLanding) landing() (Landing, error) {
	id, err := strconv.ParseUint(r.ID, 10, 32)
	if err != nil || id == 0 {
		return Landing{}, fmt.Errorf("bad id %q", r.ID)
	}
	if id >= IDOffset { // generated records' ids would collide (see ID)
		return Landing{}, fmt.Errorf("id %d is not below %d", id, IDOffset)
	}
	if r.Name == "" {
		return Landing{}, fmt.Errorf("no name")
	}
	l := r.Landing // the fields written as they are
	l.ID = uint32(id)
	if l.Mass, err = optFloat("mass", r.Mass); err != nil {
		return Landing{}, err
	}
	if l.RecLat, err = optFloat("reclat", r.RecLat); err != nil {
		return Landing{}, err
	}
	if l.RecLong, err = optFloat("reclong", r.RecLong); err != nil {
		return Landing{}, err
	}
	if r.Year != nil {
		t, err := time.Parse(time.RFC3339Nano, *r.Year)
		if err != nil {
			return Landing{}, fmt.Errorf("bad year: %w", err)
		}
		t = t.UTC()
		l.Year = &t
	}
	if g := l.GeoLocation; g != nil && (g.Type != "Point" || len(g.Coordinates) != 2) {
		return Landing{}, fmt.Errorf("geolocation is not a 2-D GeoJSON point: %+v", *g)
	}
	return l, nil
}

func optFloat(name string, s *string) (*float64, error) {
	if s == nil {
		return nil, nil
	}
	f, err := strconv.ParseFloat(*s, 64)
	if err != nil {
		return nil, fmt.Errorf("bad %s %q", name, *s)
	}
	return &f, nil
}
