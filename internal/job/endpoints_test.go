package job_test

import (
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// Target checks the endpoint options without work: each rule is one
// message naming the flags, and the run's target is the endpoints' own.
func TestEndpointsTarget(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	cases := map[string]struct {
		e       job.Endpoints
		target  string
		want    string // the target, or the error
		wantErr bool
	}{
		"none":            {target: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		"rest":            {e: job.Endpoints{RESTURL: "http://127.0.0.1:9000/x"}, want: "127.0.0.1:9000"},
		"grpc":            {e: job.Endpoints{GRPCAddr: "127.0.0.1:9001", GRPCMethod: "p.S/M"}, want: "127.0.0.1:9001"},
		"header alone":    {e: job.Endpoints{Changed: given("header")}, want: "--header: give --rest-url or --grpc-method too", wantErr: true},
		"schema alone":    {e: job.Endpoints{Changed: given("schema")}, want: "--schema: give --grpc-method too", wantErr: true},
		"schema, payload": {e: job.Endpoints{Changed: given("schema"), SchemaChecked: true}},
		"with target":     {e: job.Endpoints{RESTURL: "http://h:1/"}, target: "h:2", want: "--target and --rest-url/--grpc-method/--endpoints are exclusive: the endpoints name their servers", wantErr: true},
		"grpc half":       {e: job.Endpoints{GRPCMethod: "p.S/M"}, want: "--grpc-addr and --grpc-method go together", wantErr: true},
		"records":         {e: job.Endpoints{RESTURL: "http://h:1/", Changed: given("records")}, want: "--records is the contract's: a run of your own endpoints measures --rest-url over rest and --grpc-method over grpc", wantErr: true},
		"rest-body, grpc": {e: job.Endpoints{GRPCAddr: "h:1", GRPCMethod: "p.S/M", Changed: given("rest-body")}, want: "--rest-body: give --rest-url too", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.e.Target(tc.target)
			if tc.wantErr {
				if err == nil || err.Error() != tc.want {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Target = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// ClientTLS sets the sweep of its mode and refuses the CA options where
// they mean nothing.
func TestClientTLSApply(t *testing.T) {
	var cfg plan.Config
	if err := (job.ClientTLS{Mode: "both"}).Apply(&cfg, "h:1"); err != nil || !slices.Equal(cfg.TLS, []bool{false, true}) || cfg.TLSConfig == nil {
		t.Fatalf("both: TLS %v, config %v, err %v", cfg.TLS, cfg.TLSConfig, err)
	}
	for _, tc := range []struct {
		t      job.ClientTLS
		target string
		want   string
	}{
		{job.ClientTLS{Mode: "off", Insecure: true}, "h:1", "--tls-ca and --tls-insecure need --tls"},
		{job.ClientTLS{Mode: "on", CA: "ca.pem", Insecure: true}, "h:1", "--tls-ca and --tls-insecure are exclusive: give one"},
		{job.ClientTLS{Mode: "on", Insecure: true}, "", "--tls-ca and --tls-insecure are for --target: the own server's certificate is trusted automatically"},
	} {
		if err := tc.t.Apply(&plan.Config{}, tc.target); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err %v, want %q", tc.t, err, tc.want)
		}
	}
}
