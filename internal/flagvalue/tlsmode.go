package flagvalue

import (
	"fmt"

	"github.com/spf13/pflag"
)

// tlsModes are the TLS settings of each cell in turn, per mode of --tls.
var tlsModes = map[string][]bool{"off": nil, "on": {true}, "both": {false, true}}

// TLSMode is run's --tls: off, on (every cell over TLS; --tls alone, with
// the flag's NoOptDefVal "on") or both (every cell plaintext, then over
// TLS). The zero value is off.
type TLSMode string

func (m *TLSMode) String() string { return string(*m) }
func (m *TLSMode) Set(s string) error {
	if _, ok := tlsModes[s]; !ok {
		return fmt.Errorf("%q: want off, on or both", s)
	}
	*m = TLSMode(s)
	return nil
}
func (*TLSMode) Type() string { return "mode" }

// Sweep is the mode's TLS setting of each cell in turn: nil for off.
func (m TLSMode) Sweep() []bool { return tlsModes[string(m)] }

// TakeArg lets "--tls both" work as "--tls=both": with NoOptDefVal, pflag
// reads the word after --tls as a positional argument, and the commands
// take none, so a lone mode word after --tls can only be its value.
func (m *TLSMode) TakeArg(fl *pflag.FlagSet, args []string) []string {
	if len(args) == 1 && fl.Changed("tls") && *m == "on" {
		if _, ok := tlsModes[args[0]]; ok {
			*m = TLSMode(args[0])
			return nil
		}
	}
	return args
}
