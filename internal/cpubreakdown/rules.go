package cpubreakdown

import "strings"

// Category is where a CPU sample's time went.
type Category string

// The categories, in display order.
const (
	Encode      Category = "encode"      // JSON and protobuf encoding
	Decode      Category = "decode"      // JSON and protobuf decoding
	HTTP1       Category = "http1"       // net/http's HTTP/1.1 (parsing, writing, the client transport)
	HTTP2       Category = "http2"       // HTTP/2 framing, flow control, HPACK (x/net/http2, net/http's bundled copy, grpc-go's transport)
	GRPC        Category = "grpc"        // grpc-go above its transport, connect-go (gRPC-Web, Connect)
	TLS         Category = "tls"         // crypto/tls and the ciphers under it
	Compression Category = "compression" // gzip/flate, CRC
	Syscall     Category = "syscall_net" // system calls, the netpoller, package net
	GC          Category = "gc"          // garbage collection (marking, assists, sweeping, scavenging); allocation with no caller of another category
	Runtime     Category = "runtime"     // the scheduler, and runtime code with no caller of another category
	Other       Category = "other"       // the application's own code, and whatever no rule names
)

// Categories lists every category in display order.
var Categories = []Category{Encode, Decode, HTTP1, HTTP2, GRPC, TLS, Compression, Syscall, GC, Runtime, Other}

// Label is how a category reads in tables and charts.
func (c Category) Label() string {
	switch c {
	case Encode:
		return "encoding"
	case Decode:
		return "decoding"
	case HTTP1:
		return "HTTP/1.1"
	case HTTP2:
		return "HTTP/2+HPACK"
	case GRPC:
		return "gRPC"
	case TLS:
		return "TLS"
	case Compression:
		return "compression"
	case Syscall:
		return "syscalls+net"
	case GC:
		return "GC+alloc"
	case Runtime:
		return "scheduler+runtime"
	}
	return string(c)
}

// strength is how a frame matched by a rule takes part in attribution.
type strength uint8

const (
	// none: the frame bears no category; its time is its caller's (a
	// helper package such as bufio, reflect or strconv, the JSON scanner
	// shared by encoder and decoder, a wrapper).
	none strength = iota
	// weak: the frame's category counts only when no frame of the stack
	// bears a strong one (the runtime's allocator and helpers: memmove
	// under an encoder is encoding's, mallocgc under net/http HTTP/1.1's).
	weak
	// strong: the frame's category counts; the innermost strong frame of a
	// stack decides.
	strong
)

// A rule names a category for the functions whose full name (package path,
// then the function, as a profile has it: "encoding/json.(*encodeState).marshal")
// starts with prefix and, when any is set, holds one of its strings after
// the prefix.
type rule struct {
	cat    Category
	how    strength
	prefix string
	any    []string
}

// rules is THE table: the first rule that matches a frame decides how the
// frame counts. A frame no rule matches is the application's own code
// (or a library no rule names): Other, strong.
//
// How a sample is attributed (Attribute): the innermost frame whose rule
// is strong decides (so a write(2) under crypto/tls under an encoder is a
// syscall, TLS encryption under an encoder is TLS, and mallocgc under an
// encoder is encoding); failing one, the innermost weak frame's category;
// failing that, Other.
var rules = []rule{
	// Runtime first: the allocator is charged to whoever allocates, the
	// collector's work to GC (an assist under an encoder is GC: it is
	// the collector's work, paid by the allocating goroutine), the
	// scheduler's to runtime, the netpoller's to syscalls and network.
	{GC, weak, "runtime.", []string{"mallocgc", "newobject", "makeslice", "growslice", "makemap", "newarray", "rawstring", "rawbyteslice", "rawruneslice", "(*mcache)", "(*mcentral)", "(*mheap)", "nextFreeFast", "heapSetType", "memclrNoHeapPointers", "(*mspan)", "(*pageAlloc).alloc", "(*fixalloc)", "persistentalloc"}},
	{GC, strong, "runtime.", []string{"gcBgMarkWorker", "gcDrain", "gcAssist", "markroot", "scanobject", "scanblock", "scanstack", "scanframe", "scanSpan", "greyobject", "gcMark", "gcStart", "gcSweep", "sweep", "Sweep", "scavenge", "wbBuf", "gcWriteBarrier", "(*gcWork)", "gcFlushBgCredit", "(*gcControllerState)", "tryGetSpan", "(*spanQueue)", "gcResetMarkState", "finalizer"}},
	{Syscall, strong, "runtime.", []string{"netpoll", "epollwait"}},
	{Runtime, strong, "runtime.", []string{"schedule", "findRunnable", "findrunnable", "park_m", "goexit0", "gosched", "goschedImpl", "gopreempt", "preemptPark", "mstart", "sysmon", "stealWork", "runqgrab", "runqsteal", "startm", "stopm", "wakep", "handoffp", "resetspinning", "injectglist", "checkTimers", "(*timers)", "newproc", "gcstopm", "notesleep", "notewakeup"}},
	{Runtime, weak, "runtime.", nil},
	{Syscall, strong, "internal/runtime/syscall", nil},
	{Runtime, weak, "internal/runtime/", nil},
	{Runtime, weak, "runtime/internal/", nil},

	// System calls and the network.
	{Syscall, strong, "syscall.", nil},
	{Syscall, strong, "internal/poll.", nil},
	{Syscall, strong, "internal/syscall/", nil},
	{Syscall, strong, "golang.org/x/sys/unix.", nil},
	{Syscall, strong, "net.", nil},

	// Compression before TLS and HTTP: gzip under either is compression.
	{Compression, strong, "compress/", nil},
	{Compression, strong, "hash/crc32.", nil},
	{Compression, strong, "hash/adler32.", nil},
	{Compression, strong, "github.com/klauspost/compress/", nil},
	{Compression, strong, "google.golang.org/grpc/encoding/gzip.", nil},

	{TLS, strong, "crypto/", nil},
	{TLS, strong, "vendor/golang.org/x/crypto/", nil},
	{TLS, strong, "golang.org/x/crypto/", nil},

	// JSON. encoding/json's scanner serves its decoder and its encoder
	// (compacting a Marshaler's output): its time is its caller's.
	{"", none, "encoding/json.", []string{"(*scanner)", "state", "checkValid", "isSpace", "isValidNumber", "cachedTypeFields", "typeFields"}},
	{Decode, strong, "encoding/json.", []string{"Unmarshal", "unmarshal", "decodeState", "Decoder", "indirect", "literalStore", "unquote", "getu4"}},
	{Encode, strong, "encoding/json.", nil}, // Marshal, the type encoders, appendString, the Encoder
	// encoding/json/v2 and jsontext (GOEXPERIMENT=jsonv2), the same code
	// as github.com/go-json-experiment/json: a type's arshaler closures
	// (makeStructArshaler.func1/func2) are named alike for both ways, so
	// they count as their caller (Marshal* or Unmarshal*).
	{Decode, strong, "encoding/json/", []string{"nmarshal", "ecode", "onsume", "nquote", "Read"}},
	{Encode, strong, "encoding/json/", []string{"arshal", "ncode", "ppend", "Write"}},
	{"", none, "encoding/json/", nil},
	{Decode, strong, "github.com/go-json-experiment/json", []string{"nmarshal", "ecode", "onsume", "nquote", "Read"}},
	{Encode, strong, "github.com/go-json-experiment/json", []string{"arshal", "ncode", "ppend", "Write"}},
	{"", none, "github.com/go-json-experiment/json", nil},
	// sonic: its encoder and decoder packages by name; its native
	// (assembly) routines by what they do; its JIT code, whose symbols
	// have no package, by the names sonic gives it (encode_<type>,
	// decode_, _f64toa, _vstring...). Validating JSON serves both ways.
	{"", none, "github.com/bytedance/sonic/internal/native", []string{"alidate"}},
	{Encode, strong, "github.com/bytedance/sonic/internal/native", []string{"quote", "toa", "escape", "f64", "f32", "i64", "u64"}},
	{Decode, strong, "github.com/bytedance/sonic/internal/native", nil},
	{Encode, strong, "github.com/bytedance/sonic/internal/encoder", nil},
	{Decode, strong, "github.com/bytedance/sonic/internal/decoder", nil},
	{Decode, strong, "github.com/bytedance/sonic", []string{"nmarshal", "ecode"}},
	{Encode, strong, "github.com/bytedance/sonic", []string{"arshal", "ncode"}},
	{"", none, "github.com/bytedance/sonic", nil},
	{"", none, "github.com/cloudwego/base64x", nil},
	{Encode, strong, "encode_", nil},
	{Decode, strong, "decode_", nil},
	{"", none, "_validate", nil},
	{Encode, strong, "_", []string{"quote", "toa", "escape"}},
	{Decode, strong, "_", nil},
	// Protobuf (binary and protojson), by the function's role; the rest
	// of the runtime (message state, reflection) is its caller's.
	{Decode, strong, "google.golang.org/protobuf/", []string{"nmarshal", "onsume", "ecode"}},
	{Encode, strong, "google.golang.org/protobuf/", []string{"arshal", "ppend", "size", "Size", "ncode"}},
	{"", none, "google.golang.org/protobuf/", nil},

	// HTTP/2: net/http's bundled copy (its names start with http2), x/net,
	// and grpc-go's transport (its framing, flow control, HPACK, loopy).
	{HTTP2, strong, "net/http.", []string{"http2"}},
	{HTTP2, strong, "net/http/internal/http2", nil},
	{HTTP2, strong, "vendor/golang.org/x/net/http2", nil},
	{HTTP2, strong, "golang.org/x/net/http2", nil},
	{HTTP2, strong, "google.golang.org/grpc/internal/transport", nil},
	{HTTP1, strong, "net/http", nil}, // net/http and net/http/internal: HTTP/1.1
	{HTTP1, strong, "net/textproto.", nil},
	{HTTP1, strong, "vendor/golang.org/x/net/http/httpguts", nil},
	{HTTP1, strong, "golang.org/x/net/http/httpguts", nil},
	{HTTP1, strong, "net/url.", nil},
	{GRPC, strong, "google.golang.org/grpc", nil},
	{GRPC, strong, "connectrpc.com/connect", nil},

	// Helpers and glue: their time is their caller's.
	{"", none, "github.com/meteorbench/meteorbench/internal/jsoncodec", nil},
	{"", none, "github.com/meteorbench/meteorbench/gen/", nil},
	{"", none, "google.golang.org/genproto", nil},
	{"", none, "bufio.", nil},
	{"", none, "bytes.", nil},
	{"", none, "strings.", nil},
	{"", none, "strconv.", nil},
	{"", none, "sync", nil}, // sync and sync/atomic
	{"", none, "sort.", nil},
	{"", none, "slices.", nil},
	{"", none, "maps.", nil},
	{"", none, "reflect.", nil},
	{"", none, "unicode", nil},
	{"", none, "io.", nil},
	{"", none, "math", nil},
	{"", none, "context.", nil},
	{"", none, "errors.", nil},
	{"", none, "fmt.", nil},
	{"", none, "time.", nil},
	{"", none, "os.", nil},
	{"", none, "internal/", nil},
	{"", none, "encoding/", nil},
	{"", none, "container/", nil},
	{"", none, "unique.", nil},
	{"", none, "iter.", nil},
	{"", none, "weak.", nil},
	{"", none, "log", nil},
	{"", none, "hash/", nil},
}

// classify is the first rule matching function name fn: its category and
// strength. A function no rule matches is the application's: Other, strong.
func classify(fn string) (Category, strength) {
	for i := range rules {
		r := &rules[i]
		if !strings.HasPrefix(fn, r.prefix) {
			continue
		}
		if len(r.any) > 0 {
			rest, ok := fn[len(r.prefix):], false
			for _, s := range r.any {
				if strings.Contains(rest, s) {
					ok = true
					break
				}
			}
			if !ok {
				continue
			}
		}
		return r.cat, r.how
	}
	switch {
	case fn == "":
		return "", none // an unsymbolised frame (JIT code) is its caller's
	case !strings.Contains(fn, "."):
		return Runtime, weak // a symbol without a package: the runtime's assembly (aeshashbody, memeqbody)
	}
	return Other, strong
}

// Attribute is the category of a sample whose stack is fns, innermost
// (leaf) first: the innermost frame a strong rule names decides; failing
// one, the innermost frame a weak rule names; failing that, Other.
func Attribute(fns []string) Category {
	var fallback Category
	for _, fn := range fns {
		cat, how := classify(fn)
		switch how {
		case strong:
			return cat
		case weak:
			if fallback == "" {
				fallback = cat
			}
		}
	}
	if fallback != "" {
		return fallback
	}
	return Other
}
