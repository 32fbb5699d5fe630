package flagvalue_test

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/flagvalue"
)

// TestProfileFlag: --profile alone profiles and saves nothing; --profile=DIR
// and --profile DIR (the positional word taken back) save in DIR.
func TestProfileFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		on   bool
		dir  string
		rest int
	}{
		{nil, false, "", 0},
		{[]string{"--profile"}, true, "", 0},
		{[]string{"--profile=out"}, true, "out", 0},
		{[]string{"--profile", "out"}, true, "out", 0},
		{[]string{"--profile=out", "extra"}, true, "out", 1},
	} {
		var p flagvalue.Profile
		fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
		fl.Var(&p, "profile", "")
		fl.Lookup("profile").NoOptDefVal = flagvalue.ProfileOn
		if err := fl.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		rest := p.TakeArg(fl, fl.Args())
		if p.On() != c.on || p.Dir() != c.dir || len(rest) != c.rest {
			t.Errorf("%q: on %t dir %q, %d args left; want %t %q %d", c.args, p.On(), p.Dir(), len(rest), c.on, c.dir, c.rest)
		}
	}
}
