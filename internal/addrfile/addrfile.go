// Package addrfile is the file `serve --addr-file` writes once it listens:
// the bound host:port, followed by " tls" for a TLS server. `health` reads
// it to find the server, and `run` to find the own server it started.
package addrfile

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/output"
)

// Write writes addr (and " tls" when tls) and a newline to path,
// atomically, so a reader never sees half of it.
func Write(path, addr string, tls bool) error {
	content := addr
	if tls {
		content += " tls"
	}
	return output.WriteFile(path, []byte(content+"\n"), 0o644)
}

// Read reads the file Write wrote: the address and whether the server is
// TLS. An error of a missing file wraps fs.ErrNotExist.
func Read(path string) (addr string, tls bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	text := strings.TrimSpace(string(b))
	addr, mode, _ := strings.Cut(text, " ")
	if !validPort(addr) || (mode != "" && mode != "tls") {
		return "", false, fmt.Errorf("%s holds %q, not host:port [tls]", path, text)
	}
	return addr, mode == "tls", nil
}

// validPort reports whether addr is host:port with a port to dial.
func validPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && p >= 1
}
