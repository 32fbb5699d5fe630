package flagvalue

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// ProfileOn is --profile alone (the flag's NoOptDefVal): profile, save
// nothing.
const ProfileOn = "on"

// Profile is run's --profile: off (""), on (--profile alone: ProfileOn)
// or the folder each cell's profiles are saved in (--profile DIR).
type Profile string

func (p *Profile) String() string { return string(*p) }
func (p *Profile) Set(s string) error {
	if s == "" {
		return errors.New("empty: give --profile alone, or --profile DIR to save the profiles")
	}
	*p = Profile(s)
	return nil
}
func (*Profile) Type() string { return "[DIR]" }

// On reports whether profiling is asked for.
func (p Profile) On() bool { return p != "" }

// Dir is the folder the profiles are saved in; "" for none.
func (p Profile) Dir() string {
	if p == ProfileOn {
		return ""
	}
	return string(p)
}

// TakeArg lets "--profile DIR" work as "--profile=DIR": with NoOptDefVal,
// pflag reads the word after --profile as a positional argument, and the
// commands take none, so a lone word after --profile can only be its
// folder.
func (p *Profile) TakeArg(fl *pflag.FlagSet, args []string) []string {
	if len(args) == 1 && fl.Changed("profile") && *p == ProfileOn {
		*p = Profile(args[0])
		return nil
	}
	return args
}

// MakeDir makes the folder of --profile DIR (and its parents): a file of
// that name is an error.
func (p Profile) MakeDir() error {
	dir := p.Dir()
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--profile %s: not a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--profile %s: %w", dir, err)
	}
	return nil
}
