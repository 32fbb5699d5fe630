package kubernetes

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// shutdownTimeout is serve's default --shutdown-timeout (server.DefaultShutdownTimeout).
const shutdownTimeout = 8

// manifests holds every object of the directory's *.yaml files, decoded
// strictly: an unknown or duplicated field is an error.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	jobs        map[string]*batchv1.Job
	pvcs        map[string]*corev1.PersistentVolumeClaim
	pods        map[string]*corev1.Pod
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func load(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		jobs:        map[string]*batchv1.Job{},
		pvcs:        map[string]*corev1.PersistentVolumeClaim{},
		pods:        map[string]*corev1.Pod{},
	}
	// By "apiVersion Kind": decode a document strictly into its kind's map.
	decoders := map[string]func(where, doc string) string{
		"apps/v1 Deployment":       into(t, m.deployments),
		"v1 Service":               into(t, m.services),
		"batch/v1 Job":             into(t, m.jobs),
		"v1 PersistentVolumeClaim": into(t, m.pvcs),
		"v1 Pod":                   into(t, m.pods),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docSep.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			where := fmt.Sprintf("%s, document %d", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			gvk := tm.APIVersion + " " + tm.Kind
			decode, ok := decoders[gvk]
			if !ok {
				t.Fatalf("%s: kind %q: the test knows no such kind; add it", where, gvk)
			}
			t.Logf("%s: %s %s decoded strictly", where, gvk, decode(where, doc))
		}
	}
	return m
}

// into returns a decoder that decodes a document strictly into a new T,
// files it in m under its name, and returns the name.
func into[T any, P interface {
	*T
	GetName() string
}](t *testing.T, m map[string]P) func(where, doc string) string {
	return func(where, doc string) string {
		o := P(new(T))
		n := name(t, where, doc, o)
		m[n] = o
		return n
	}
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// name decodes doc strictly into o and returns its name.
func name(t *testing.T, where, doc string, o interface {
	GetName() string
}) string {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), o); err != nil {
		t.Fatalf("%s: strict decoding: %v", where, err)
	}
	if o.GetName() == "" {
		t.Fatalf("%s: no metadata.name", where)
	}
	return o.GetName()
}

// TestStrictDecodingCatchesTypos makes sure the decoding above would fail on
// a misspelled field, so a passing load means the manifests are clean.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	bad := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completionsMode: Indexed\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil {
		t.Fatal("an unknown field (completionsMode) decoded without error")
	}
	dup := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  backoffLimit: 0\n  backoffLimit: 6\n"
	if err := yaml.UnmarshalStrict([]byte(dup), &batchv1.Job{}); err == nil {
		t.Fatal("a duplicated field (backoffLimit) decoded without error")
	}
}

func TestManifests(t *testing.T) {
	m := load(t)
	dep := m.deployments["meteorbench"]
	svc := m.services["meteorbench"]
	load := m.jobs["meteorbench-load"]
	merge := m.jobs["meteorbench-merge"]
	if dep == nil || svc == nil || load == nil || merge == nil {
		t.Fatalf("want Deployment and Service meteorbench, Jobs meteorbench-load and meteorbench-merge; have %v %v %v",
			keys(m.deployments), keys(m.services), keys(m.jobs))
	}

	t.Run("every pod is hardened and bounded", func(t *testing.T) {
		specs := map[string]*corev1.PodSpec{"Deployment " + dep.Name: &dep.Spec.Template.Spec}
		for n, j := range m.jobs {
			specs["Job "+n] = &j.Spec.Template.Spec
		}
		for n, p := range m.pods {
			specs["Pod "+n] = &p.Spec
		}
		for where, ps := range specs {
			checkPodSpec(t, where, ps)
		}
	})

	t.Run("server: Service, ports and probes agree", func(t *testing.T) {
		ps := &dep.Spec.Template.Spec
		labels := dep.Spec.Template.Labels
		sel, err := metav1.LabelSelectorAsMap(dep.Spec.Selector)
		if err != nil || !subset(sel, labels) || len(sel) == 0 {
			t.Fatalf("Deployment selector %v does not select its pod labels %v (%v)", sel, labels, err)
		}
		if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, labels) {
			t.Fatalf("Service selector %v does not select the Deployment's pod labels %v", svc.Spec.Selector, labels)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("server pod: %d containers, want 1", len(ps.Containers))
		}
		c := &ps.Containers[0]
		listen := listenPort(t, c)
		// serve answers REST and gRPC on TCP and HTTP/3 on UDP, both on
		// the port it listens on: the container declares that port once
		// per protocol, and the Service forwards both under one port
		// number, as a client asks the same HOST:PORT over TCP and QUIC.
		if len(c.Ports) != 2 || protocols(c.Ports, func(p corev1.ContainerPort) (corev1.Protocol, bool) { return p.Protocol, p.ContainerPort == listen }) != "TCP,UDP" {
			t.Fatalf("container ports %v, want exactly the port serve listens on (%d), TCP (REST and gRPC share it) and UDP (HTTP/3)", c.Ports, listen)
		}
		if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].Port != svc.Spec.Ports[1].Port {
			t.Fatalf("Service ports %v, want two with one number: TCP first (run's --target), then UDP", svc.Spec.Ports)
		}
		for _, sp := range svc.Spec.Ports {
			if got, proto := resolve(t, c, sp.TargetPort), portProtocol(c, sp.TargetPort); got != listen || proto != sp.Protocol {
				t.Fatalf("Service %s port's targetPort %v is container port %d %s, serve listens on %d %s", sp.Protocol, sp.TargetPort.String(), got, proto, listen, sp.Protocol)
			}
		}
		for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Fatalf("%s probe: want an httpGet on /healthz, got %+v", kind, p)
			}
			if p.HTTPGet.Path != "/healthz" {
				t.Fatalf("%s probe path %q, want /healthz", kind, p.HTTPGet.Path)
			}
			if got := resolve(t, c, p.HTTPGet.Port); got != listen || portProtocol(c, p.HTTPGet.Port) != corev1.ProtocolTCP {
				t.Fatalf("%s probe port %v is %d %s, serve listens on %d TCP", kind, p.HTTPGet.Port.String(), got, portProtocol(c, p.HTTPGet.Port), listen)
			}
		}
		if g := ps.TerminationGracePeriodSeconds; g == nil || *g <= shutdownTimeout {
			t.Fatalf("terminationGracePeriodSeconds %s: must exceed serve's %d s drain", i64(g), shutdownTimeout)
		}
		if !mountsEmptyDir(ps, c, "/tmp") {
			t.Fatalf("the server needs an emptyDir at /tmp for $METEORBENCH_ADDR_FILE on its read-only root")
		}
		if f := env(c, "METEORBENCH_ADDR_FILE"); f != "" && !strings.HasPrefix(f, "/tmp/") {
			t.Fatalf("METEORBENCH_ADDR_FILE %q is not under the /tmp emptyDir", f)
		}
		t.Logf("Service %s:%d -> %v -> container port %d; probes GET /healthz on it", svc.Name, svc.Spec.Ports[0].Port, svc.Spec.Ports[0].TargetPort.String(), listen)
	})

	var n int
	t.Run("load generators: an Indexed Job, one segment per index, never twice", func(t *testing.T) {
		s := &load.Spec
		if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
			t.Fatalf("completionMode %v, want Indexed", s.CompletionMode)
		}
		if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
			t.Fatalf("backoffLimit %s, want 0: a failed pod would be replaced with the same index and its segment run twice", i32(s.BackoffLimit))
		}
		if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Fatalf("restartPolicy %q, want Never", s.Template.Spec.RestartPolicy)
		}
		c := &s.Template.Spec.Containers[0]
		args := flags(c.Args)
		if len(c.Args) == 0 || c.Args[0] != "run" {
			t.Fatalf("args %v: want meteorbench run", c.Args)
		}
		seg := args["--segment"]
		mm := regexp.MustCompile(`^(auto|[1-9][0-9]*)/([1-9][0-9]*)$`).FindStringSubmatch(seg)
		if mm == nil {
			t.Fatalf("--segment %q: want auto/N (or i/N)", seg)
		}
		n, _ = strconv.Atoi(mm[2])
		if s.Completions == nil || s.Parallelism == nil || int(*s.Completions) != n || int(*s.Parallelism) != n {
			t.Fatalf("completions %s, parallelism %s: both must be the N of --segment %s", i32(s.Completions), i32(s.Parallelism), seg)
		}
		// Every segment gets a share of the workers of every cell.
		for _, cs := range strings.Split(args["--concurrency"], ",") {
			if c, err := strconv.Atoi(cs); err != nil || c < n {
				t.Fatalf("--concurrency %q: each value must be at least N = %d, or a segment has no worker", args["--concurrency"], n)
			}
		}
		// --target is the Service.
		host, port, err := net.SplitHostPort(args["--target"])
		if err != nil || host != svc.Name || port != strconv.Itoa(int(svc.Spec.Ports[0].Port)) {
			t.Fatalf("--target %q, want the Service %s:%d (%v)", args["--target"], svc.Name, svc.Spec.Ports[0].Port, err)
		}
		if args["--start-at"] == "" {
			t.Fatalf("no --start-at: the generators must share a start time")
		}
		out := args["--out"]
		if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
			t.Fatalf("--out %q: must name the index, or the pods overwrite each other", out)
		}
		if !slices.Contains(strings.Split(args["--format"], ","), "json") {
			t.Fatalf("--format %q: merge reads json", args["--format"])
		}
		// Every $(VAR) Kubernetes must expand is defined.
		for _, a := range c.Args {
			for _, v := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(a, -1) {
				if v[1] != "JOB_COMPLETION_INDEX" && env(c, v[1]) == "" {
					t.Fatalf("arg %q uses $(%s), which the container does not define", a, v[1])
				}
			}
		}
		claim := claimAt(t, &s.Template.Spec, c, filepath.Dir(out))
		if m.pvcs[claim] == nil {
			t.Fatalf("--out %s is on claim %q, which no manifest defines", out, claim)
		}
		if !mountsEmptyDir(&s.Template.Spec, c, "/tmp") {
			t.Fatalf("the generator has a read-only root: give it an emptyDir at /tmp")
		}
		t.Logf("%d generators: completions %d, parallelism %d, Indexed, restartPolicy Never, backoffLimit 0; run --segment %s --target %s --out %s (claim %s)",
			n, *s.Completions, *s.Parallelism, seg, args["--target"], out, claim)
	})

	t.Run("merge reads every segment from the same volume", func(t *testing.T) {
		if n == 0 {
			t.Skip("the load Job did not pass")
		}
		lc := &load.Spec.Template.Spec.Containers[0]
		out := flags(lc.Args)["--out"]
		c := &merge.Spec.Template.Spec.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != "merge" {
			t.Fatalf("merge Job args %v: want meteorbench merge", c.Args)
		}
		var files []string
		for _, a := range c.Args[1:] {
			if !strings.HasPrefix(a, "-") {
				files = append(files, a)
			}
		}
		var want []string
		for i := range n {
			want = append(want, strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))+".json")
		}
		if !slices.Equal(files, want) {
			t.Fatalf("merge reads %v, the generators write %v", files, want)
		}
		lclaim := claimAt(t, &load.Spec.Template.Spec, lc, filepath.Dir(out))
		if got := claimAt(t, &merge.Spec.Template.Spec, c, filepath.Dir(files[0])); got != lclaim {
			t.Fatalf("merge reads claim %q, the generators write %q", got, lclaim)
		}
		if merge.Spec.BackoffLimit == nil || *merge.Spec.BackoffLimit != 0 {
			t.Fatalf("merge backoffLimit %s, want 0", i32(merge.Spec.BackoffLimit))
		}
		for pn, p := range m.pods {
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != lclaim {
					t.Fatalf("pod %s mounts claim %q, the results are on %q", pn, v.PersistentVolumeClaim.ClaimName, lclaim)
				}
			}
		}
		t.Logf("merge %s", strings.Join(c.Args[1:], " "))
	})
}

// checkPodSpec: non-root, read-only root, no privilege escalation, no
// capabilities, requests and limits, every mount backed by a volume.
func checkPodSpec(t *testing.T, where string, ps *corev1.PodSpec) {
	t.Helper()
	if len(ps.Containers) == 0 {
		t.Fatalf("%s: no containers", where)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken should be false: nothing here talks to the API server", where)
	}
	all := append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...)
	for _, c := range all {
		w := where + " container " + c.Name
		psc, sc := ps.SecurityContext, c.SecurityContext
		if sc == nil {
			t.Fatalf("%s: no securityContext", w)
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil && psc != nil {
			nonRoot = psc.RunAsNonRoot
		}
		uid := sc.RunAsUser
		if uid == nil && psc != nil {
			uid = psc.RunAsUser
		}
		if nonRoot == nil || !*nonRoot || uid == nil || *uid == 0 {
			t.Errorf("%s: runAsNonRoot %v, runAsUser %v: want true and a non-zero uid", w, nonRoot, uid)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: readOnlyRootFilesystem must be true", w)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation must be false", w)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities %+v: want drop [ALL], add none", w, sc.Capabilities)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", w)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okr := c.Resources.Requests[r]
			lim, okl := c.Resources.Limits[r]
			if !okr || !okl {
				t.Errorf("%s: %s request and limit must both be set", w, r)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("%s: %s request %s above limit %s", w, r, req.String(), lim.String())
			}
		}
		for _, vm := range c.VolumeMounts {
			if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name }) {
				t.Errorf("%s: mount %s names no volume", w, vm.Name)
			}
		}
		if uid != nil {
			t.Logf("%s: uid %d, runAsNonRoot, read-only root, no escalation, capabilities dropped", w, *uid)
		}
	}
}

// listenPort is the port serve listens on: --addr, else $METEORBENCH_ADDR,
// else serve's default 8080.
func listenPort(t *testing.T, c *corev1.Container) int32 {
	t.Helper()
	addr := flags(c.Args)["--addr"]
	if addr == "" {
		addr = env(c, "METEORBENCH_ADDR")
	}
	if addr == "" {
		addr = ":8080"
	}
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("serve address %q: %v %v", addr, err, err2)
	}
	return int32(n)
}

// resolve turns a port reference (number or container port name) into a number.
func resolve(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("port name %q is not a port of container %s", p.StrVal, c.Name)
	return 0
}

// portProtocol is the protocol of a port reference: a named container
// port's (TCP when unset, as Kubernetes defaults it), TCP for a number.
func portProtocol(c *corev1.Container, p intstr.IntOrString) corev1.Protocol {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal && cp.Protocol != "" {
			return cp.Protocol
		}
	}
	return corev1.ProtocolTCP
}

// protocols lists, sorted and joined by commas, the protocols of the ports
// that match, "?" for one that does not (or is declared twice).
func protocols[P any](ps []P, match func(P) (corev1.Protocol, bool)) string {
	var out []string
	for _, p := range ps {
		proto, ok := match(p)
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if !ok || slices.Contains(out, string(proto)) {
			proto = "?"
		}
		out = append(out, string(proto))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// flags maps "--name=value" and "--name value" arguments to their values.
func flags(args []string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			m[k] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			m[a] = args[i+1]
			i++
		} else {
			m[a] = "true"
		}
	}
	return m
}

func env(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// claimAt returns the PVC mounted at dir in container c.
func claimAt(t *testing.T, ps *corev1.PodSpec, c *corev1.Container, dir string) string {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != dir {
			continue
		}
		for _, v := range ps.Volumes {
			if v.Name == vm.Name && v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
	}
	t.Fatalf("container %s: no PersistentVolumeClaim mounted at %s", c.Name, dir)
	return ""
}

func mountsEmptyDir(ps *corev1.PodSpec, c *corev1.Container, dir string) bool {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != dir || vm.ReadOnly {
			continue
		}
		for _, v := range ps.Volumes {
			if v.Name == vm.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func i32(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func i64(p *int64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(*p, 10)
}
