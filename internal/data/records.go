package data

import (
	"fmt"

	"github.com/meteorbench/meteorbench/api"
)

// Answers of more than Count records (the payload-size variable, api.QueryRecords)
// go on past the embedded file deterministically, without the network: record i
// of an n-record answer is the embedded record i mod Count, the same in every
// field but its id, which is
//
//	ID(i) = id of embedded record (i mod Count) + (i / Count) * IDOffset
//
// So records 0..999 are the file itself, record 1000 is Aachen again with id
// 100001, record 2500 is embedded record 500 with id 200000 + its own id, and
// the first n records of any longer answer are the n-record answer. Because
// every embedded id is below IDOffset (Parse checks it), no two records of an
// answer share an id, and the last five digits of an id name the record it
// copies.

// IDOffset separates the copies of the data set in a generated answer. It is
// above the largest embedded id (57,168).
const IDOffset = 100_000

// MaxN is the largest answer the generating accessors build: the contract's
// bound. Its ids stay below 10^7, far from uint32's limit.
const MaxN = api.MaxRecords

// ID returns the id of record i (0-based) of any answer of more than i
// records; i must be in [0, MaxN).
func ID(i int) (uint32, error) {
	if i < 0 || i >= MaxN {
		return 0, fmt.Errorf("data: record %d is outside [0, %d)", i, MaxN)
	}
	ls, err := parsed()
	if err != nil {
		return 0, err
	}
	return generatedID(ls[i%Count].ID, i), nil
}

// IDsN returns the ids of an n-record answer in order (a fresh slice), for
// callers that validate answers; n must be in [0, MaxN]. IDsN(Count) is IDs().
func IDsN(n int) ([]uint32, error) {
	return generate(n, func(base *Landing, i int) uint32 { return generatedID(base.ID, i) })
}

// LandingsN returns an n-record answer, generated records included, as a
// deep copy the caller owns (Landings is LandingsN(Count)); n must be in
// [0, MaxN]. Meant for clients and tests: about 150 µs and 5,900
// allocations per 1000 records.
func LandingsN(n int) ([]Landing, error) {
	return generate(n, func(base *Landing, i int) Landing {
		l := base.Clone()
		l.ID = generatedID(base.ID, i)
		return l
	})
}

// generate builds an n-record answer's values in order, record i from the
// embedded record it copies (i mod Count); n must be in [0, MaxN].
func generate[T any](n int, record func(base *Landing, i int) T) ([]T, error) {
	ls, err := parsedN(n)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = record(&ls[i%Count], i)
	}
	return out, nil
}

// Generated returns record i of an answer built from base, the embedded
// records as Landings returns them (len(base) == Count): base[i mod Count]
// with ID(i). It is a shallow copy: its pointers are base's, so it is for
// callers that never modify either (a server building its answers once);
// i must be in [0, MaxN).
func Generated(base []Landing, i int) (Landing, error) {
	if len(base) != Count {
		return Landing{}, fmt.Errorf("data: base has %d records, want %d", len(base), Count)
	}
	if i < 0 || i >= MaxN {
		return Landing{}, fmt.Errorf("data: record %d is outside [0, %d)", i, MaxN)
	}
	l := base[i%Count]
	l.ID = generatedID(l.ID, i)
	return l, nil
}

func generatedID(base uint32, i int) uint32 { return base + uint32(i/Count)*IDOffset }

// parsedN returns the embedded records, parsed, for building an n-record
// answer, once n is checked to be in [0, MaxN].
func parsedN(n int) ([]Landing, error) {
	if n < 0 || n > MaxN {
		return nil, fmt.Errorf("data: %d records is outside [0, %d]", n, MaxN)
	}
	return parsed()
}
