package report_test

import (
	"fmt"
	"os"

	"github.com/meteorbench/meteorbench/api"

	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

func ExampleWrite() {
	r := &results.Result{
		Schema:   results.Schema,
		Settings: results.Settings{Mode: results.ModeClosed, Repeat: 1},
		Cells: []results.Cell{{
			CellKey:     results.CellKey{Protocol: api.GRPC, Scenario: api.Small, Batch: 100, Condition: results.Condition{Concurrency: 1}},
			Connections: 1, Mode: results.ModeClosed, Calls: 1000, DurationS: 1, CallsPerS: 1000,
			LatencyUS: results.Latency{P50: 950, P90: 1200, P99: 1500, P999: 1800, Max: 2100, Mean: 1000},
		}},
	}
	if err := report.Write(os.Stdout, "csv", r); err != nil {
		fmt.Println(err)
	}
	// Output:
	// protocol,scenario,batch,concurrency,connections,mode,calls,errors,duration_s,calls_per_s,mb_per_s,latency_p50_us,latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,latency_mean_us,batch_ms_mean,batch_ms_stddev,bytes_sent_per_call,bytes_received_per_call,client_cpu_us_per_call,server_cpu_us_per_call,first_record_p50_us,rate_requested,rate_achieved,late_calls,last_byte_p50_us,decode_mean_us,stop_reason,suspect,server_utilisation,generator_wake_p50_us,server_cpus,link,records,compress,tls,json_codec,endpoint,payload,traffic,engine,http_version,conns,messages,feed_rate,feed_transport,proxy
	// grpc,small,100,1,1,closed-loop,1000,0,1,1000,0,950,1200,1500,1800,2100,1000,0,0,0,0,0,,,,,,,,,,,,0,,0,,false,,,,,,,0,0,,,
}

func ExampleCheckFormat() {
	fmt.Println(report.CheckFormat("html"))
	fmt.Println(report.CheckFormat("yaml"))
	// Output:
	// <nil>
	// unknown format "yaml" (want one of table, json, jsonl, csv, markdown, html, svg, png)
}
