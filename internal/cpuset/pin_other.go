//go:build !linux

package cpuset

// Available needs Linux; elsewhere it returns an error matching
// errors.ErrUnsupported.
func Available() (Set, error) { return Set{}, errNoLinux{"reading the CPU affinity"} }

// Pin needs Linux; elsewhere it returns an error matching
// errors.ErrUnsupported and changes nothing.
func Pin(s Set) error { return errNoLinux{"pinning CPUs"} }
