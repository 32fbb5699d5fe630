package loadgen

import (
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Compressions, as Config.Compress (and run --compress) names them.
const (
	CompressNone = "none"
	CompressGzip = call.CompressGzip
)

// Compressions lists the known compressions, in display order.
func Compressions() []string { return []string{CompressNone, CompressGzip} }

func validCompress(zs []string) error {
	for _, z := range zs {
		if !slices.Contains(Compressions(), z) {
			return fmt.Errorf("compress: unknown compression %q (want none or gzip)", z)
		}
	}
	return unique("compress", zs)
}

// conditionCompress is a compression as a cell's condition and the
// adapters' option name it: "" for none, so keys without compression stay
// as they were.
func conditionCompress(z string) string {
	if z == CompressNone {
		return ""
	}
	return z
}

// settingsCompress records the sweep in results.Settings; nil when it is
// only the default, so documents of runs without compression stay as they were.
func settingsCompress(zs []string) []string {
	if len(zs) == 0 || slices.Equal(zs, []string{CompressNone}) {
		return nil
	}
	return zs
}
