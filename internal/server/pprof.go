package server

// The profiling endpoint (serve --pprof, Config.Pprof): net/http/pprof's
// paths, written here on runtime/pprof so that nothing is registered on
// http.DefaultServeMux, with what a shared server needs: the bearer token
// when one is set, one CPU profile at a time (a second request gets 429,
// not a second profiler), and a way to end a running CPU profile early
// (POST PprofStopPath), which the load generator uses to make the profile
// end with a cell's measured window.

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The profiling endpoint's paths.
const (
	PprofPrefix      = "/debug/pprof/"
	PprofProfilePath = PprofPrefix + "profile"      // GET ?seconds=N: a CPU profile of the next N seconds
	PprofStopPath    = PprofPrefix + "profile/stop" // POST: end the running CPU profile now
)

// Bounds of a CPU profile's ?seconds=: net/http/pprof's default, and the
// longest a request may hold the profiler.
const (
	pprofDefaultSeconds = 30
	PprofMaxSeconds     = 3600
)

// pprofHandler serves PprofPrefix.
type pprofHandler struct {
	token []byte          // nil: no token
	drain <-chan struct{} // closed when the server starts draining

	mu      sync.Mutex
	running bool
	stop    chan struct{} // closed to end the running CPU profile early
}

func newPprofHandler(token []byte, drain <-chan struct{}) *pprofHandler {
	return &pprofHandler{token: token, drain: drain}
}

func (h *pprofHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.token != nil && !restAuthorized(r, h.token) {
		w.Header()["Www-Authenticate"] = []string{`Bearer realm="meteorbench"`}
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	switch name := strings.TrimPrefix(r.URL.Path, PprofPrefix); name {
	case "":
		if methodAllowed(w, r, allowGet) {
			h.index(w)
		}
	case "profile":
		if methodAllowed(w, r, allowGet) {
			h.cpu(w, r)
		}
	case "profile/stop":
		if r.Method != http.MethodPost {
			w.Header()["Allow"] = []string{http.MethodPost}
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		if !h.stopNow() {
			writeError(w, http.StatusConflict, "no CPU profile is running")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		p := pprof.Lookup(name)
		if p == nil || strings.Contains(name, "/") {
			writeError(w, http.StatusNotFound, "no such profile: "+name+" (the profiles: profile (CPU), "+strings.Join(profileNames(), ", ")+")")
			return
		}
		if !methodAllowed(w, r, allowGet) {
			return
		}
		debug, _ := strconv.Atoi(r.FormValue("debug"))
		if debug != 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		_ = p.WriteTo(w, debug)
	}
}

// profileNames are runtime/pprof's named profiles.
func profileNames() []string {
	var out []string
	for _, p := range pprof.Profiles() {
		out = append(out, p.Name())
	}
	return out
}

func (h *pprofHandler) index(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	h.mu.Lock()
	running := h.running
	h.mu.Unlock()
	fmt.Fprintf(w, "meteorbench serve --pprof\n\n%s?seconds=N  CPU profile of the next N seconds (one at a time: 429 while one runs; running now: %t)\nPOST %s  end the running CPU profile now\n", PprofProfilePath, running, PprofStopPath)
	for _, p := range pprof.Profiles() {
		fmt.Fprintf(w, "%s%s  %d\n", PprofPrefix, p.Name(), p.Count())
	}
}

// cpu records a CPU profile for ?seconds= (or until PprofStopPath, the
// client going away or the server draining) and sends it.
func (h *pprofHandler) cpu(w http.ResponseWriter, r *http.Request) {
	secs := int64(pprofDefaultSeconds)
	if v := r.FormValue("seconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > PprofMaxSeconds {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("seconds %q: want a whole number of seconds, 1 to %d", v, PprofMaxSeconds))
			return
		}
		secs = n
	}
	stop, ok := h.begin()
	if !ok {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "a CPU profile is already being recorded: one at a time")
		return
	}
	defer h.end()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		writeError(w, http.StatusInternalServerError, "start CPU profile: "+err.Error())
		return
	}
	d := time.Duration(secs) * time.Second
	// The answer comes after the profile: past the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + DefaultWriteTimeout))
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-stop:
	case <-r.Context().Done():
	case <-h.drain:
	}
	t.Stop()
	pprof.StopCPUProfile()
	if r.Context().Err() != nil {
		return // no one to send it to
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="profile"`)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// begin marks a CPU profile running and returns the channel that ends it
// early; false when one already runs.
func (h *pprofHandler) begin() (<-chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		return nil, false
	}
	h.running, h.stop = true, make(chan struct{})
	return h.stop, true
}

func (h *pprofHandler) end() {
	h.mu.Lock()
	h.running, h.stop = false, nil
	h.mu.Unlock()
}

// stopNow ends the running CPU profile; false when none runs.
func (h *pprofHandler) stopNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running || h.stop == nil {
		return false
	}
	close(h.stop)
	h.stop = nil
	return true
}

// CheckPprof refuses the profiling endpoint on an address other machines
// can reach without a token: a CPU profile shows the server's code and
// costs its CPU. addr is the listen address (host:port; an empty host
// listens everywhere).
func CheckPprof(addr, token string) error {
	if token != "" || Loopback(addr) {
		return nil
	}
	return fmt.Errorf("pprof on %s: not a loopback address, so it needs a token (--token or $%s): a profile shows the server's code and costs its CPU", addr, TokenEnv)
}

// Loopback reports whether addr (host:port or host) is on the loopback
// interface only: localhost, 127.0.0.0/8 or ::1.
func Loopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
