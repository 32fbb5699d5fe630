package plan

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
