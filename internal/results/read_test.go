package results

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generator_bottleneck was a string (the reason) before it became a flag
// with its reason beside it: older meteorbench/v1 documents still read, the
// string as true with that reason, and write back in the new form.
func TestGeneratorBottleneckOldAndNew(t *testing.T) {
	const why = "the load generator used 1.9 of its 2 cores"
	for _, tc := range []struct {
		name   string
		field  string
		want   bool
		reason string
	}{
		{"old string", `"generator_bottleneck": "` + why + `"`, true, why},
		{"old empty string", `"generator_bottleneck": ""`, false, ""},
		{"new flag and reason", `"generator_bottleneck": true, "generator_bottleneck_reason": "` + why + `"`, true, why},
		{"new reason before flag", `"generator_bottleneck_reason": "` + why + `", "generator_bottleneck": true`, true, why},
		{"absent", `"calls": 3`, false, ""},
		{"null", `"generator_bottleneck": null`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"schema": "` + Schema + `", "cells": [{"scenario": "small", "protocol": "rest", "batch": 1, "concurrency": 1, ` + tc.field + `}]}`
			r, err := Read(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			c := r.Cells[0]
			if c.GeneratorBottleneck != tc.want || c.GeneratorBottleneckReason != tc.reason {
				t.Fatalf("read %v %q, want %v %q", c.GeneratorBottleneck, c.GeneratorBottleneckReason, tc.want, tc.reason)
			}
			if c.Scenario != "small" || c.Concurrency != 1 {
				t.Fatalf("the other fields did not read: %+v", c.CellKey)
			}
			var buf bytes.Buffer
			if err := Write(&buf, r); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if tc.want && !strings.Contains(out, `"generator_bottleneck": true`) || tc.reason != "" && !strings.Contains(out, `"generator_bottleneck_reason": "`+why+`"`) {
				t.Errorf("written back as:\n%s", out)
			}
		})
	}
	if _, err := Read(strings.NewReader(`{"schema": "` + Schema + `", "cells": [{"generator_bottleneck": 3}]}`)); err == nil {
		t.Error("a number as generator_bottleneck read")
	}
}

// A file that is no result document says why in a reader's words, named
// with its path, whoever reads it (report, compare, merge, fit --from).
func TestLoadSaysWhyNotAResult(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"":                            "not a meteorbench result (empty file)",
		`{"cells":[`:                  "not a meteorbench result (truncated JSON)",
		"not json":                    "not a meteorbench result (not JSON: invalid character 'o' in literal null (expecting 'u') at byte 2)",
		`{"schema":"meteorbench/v0"}`: `not a meteorbench result (schema "meteorbench/v0", want "meteorbench/v1")`,
	} {
		path := filepath.Join(dir, "doc.json")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), path)
		var nr *NotResultError
		if !errors.As(err, &nr) || err.Error() != path+": "+want {
			t.Errorf("%q: %v, want a NotResultError %q", content, err, path+": "+want)
		}
	}
}
