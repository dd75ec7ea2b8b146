package cdi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fakeSpec defines crib.test/fake=fake0: /dev/null re-exposed as
// /dev/fake0, with a mount, env and a hook, under spec-wide env and a
// spec-wide hook.
const fakeSpec = `cdiVersion: "0.6.0"
kind: crib.test/fake
containerEdits:
  env: ["FAKE_VENDOR=crib"]
  hooks:
    - hookName: createContainer
      path: /usr/bin/true
      args: ["true", "spec-wide"]
devices:
  - name: fake0
    containerEdits:
      env: ["FAKE_DEVICE=fake0"]
      deviceNodes:
        - path: /dev/fake0
          hostPath: /dev/null
      mounts:
        - hostPath: /etc/hostname
          containerPath: /etc/fake0.conf
          options: ["ro", "bind"]
      hooks:
        - hookName: startContainer
          path: /usr/bin/true
          args: ["true", "fake0"]
  - name: fake1
    containerEdits:
      env: ["FAKE_DEVICE=fake1"]
`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// baseSpec is a spec as ocispec builds it, enough for the edits to land.
func baseSpec() *specs.Spec {
	return &specs.Spec{
		Process: &specs.Process{User: specs.User{UID: 1000, GID: 2000}, Env: []string{"PATH=/bin"}},
		Linux: &specs.Linux{Resources: &specs.LinuxResources{
			Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
		}},
	}
}

func TestResolveAndApply(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.yaml"), fakeSpec)
	r := New([]string{dir})
	ds, err := r.Resolve([]string{"crib.test/fake=fake0"})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if got := ds.Names(); !slices.Equal(got, []string{"crib.test/fake=fake0"}) {
		t.Errorf("Names() = %q", got)
	}
	spec := baseSpec()
	if err := ds.Apply(spec); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	for _, want := range []string{"PATH=/bin", "FAKE_VENDOR=crib", "FAKE_DEVICE=fake0"} {
		if !slices.Contains(spec.Process.Env, want) {
			t.Errorf("env %q lacks %q", spec.Process.Env, want)
		}
	}
	if len(spec.Linux.Devices) != 1 {
		t.Fatalf("devices = %+v, want /dev/fake0 alone", spec.Linux.Devices)
	}
	dev := spec.Linux.Devices[0]
	// /dev/null is char 1:3; the node belongs to the process's user.
	if dev.Path != "/dev/fake0" || dev.Type != "c" || dev.Major != 1 || dev.Minor != 3 {
		t.Errorf("device = %+v, want /dev/fake0 c 1:3", dev)
	}
	if dev.UID == nil || *dev.UID != 1000 || dev.GID == nil || *dev.GID != 2000 {
		t.Errorf("device owner = %v:%v, want 1000:2000", dev.UID, dev.GID)
	}
	rules := spec.Linux.Resources.Devices
	if len(rules) != 2 || rules[0].Allow {
		t.Fatalf("device cgroup rules = %+v, want the deny-all then an allow", rules)
	}
	if r := rules[1]; !r.Allow || r.Type != "c" || r.Major == nil || *r.Major != 1 || r.Minor == nil || *r.Minor != 3 || r.Access != "rwm" {
		t.Errorf("device cgroup rule = %+v, want allow c 1:3 rwm", r)
	}
	if len(spec.Mounts) != 1 {
		t.Fatalf("mounts = %+v, want one", spec.Mounts)
	}
	if m := spec.Mounts[0]; m.Source != "/etc/hostname" || m.Destination != "/etc/fake0.conf" || !slices.Contains(m.Options, "ro") {
		t.Errorf("mount = %+v, want /etc/hostname on /etc/fake0.conf ro", m)
	}
	if spec.Hooks == nil || len(spec.Hooks.StartContainer) != 1 || len(spec.Hooks.CreateContainer) != 1 {
		t.Fatalf("hooks = %+v, want one startContainer and one createContainer", spec.Hooks)
	}
	if h := spec.Hooks.StartContainer[0]; h.Path != "/usr/bin/true" || !slices.Equal(h.Args, []string{"true", "fake0"}) {
		t.Errorf("startContainer hook = %+v", h)
	}
	if h := spec.Hooks.CreateContainer[0]; !slices.Equal(h.Args, []string{"true", "spec-wide"}) {
		t.Errorf("createContainer hook = %+v", h)
	}
}

// Two devices of one spec get its spec-wide edits once.
func TestApplySpecEditsOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.yaml"), fakeSpec)
	ds, err := New([]string{dir}).Resolve([]string{"crib.test/fake=fake0", "crib.test/fake=fake1"})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	spec := baseSpec()
	if err := ds.Apply(spec); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if n := len(spec.Hooks.CreateContainer); n != 1 {
		t.Errorf("%d spec-wide hooks, want 1", n)
	}
	// Both devices set FAKE_DEVICE; the later one wins, as in the library.
	if !slices.Contains(spec.Process.Env, "FAKE_DEVICE=fake1") || !slices.Contains(spec.Process.Env, "FAKE_VENDOR=crib") {
		t.Errorf("env = %q", spec.Process.Env)
	}
}

func TestResolveUnknown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.yaml"), fakeSpec)
	// A spec file that does not parse leaves the others usable and is
	// named with an unknown device.
	writeFile(t, filepath.Join(dir, "broken.json"), "{not json")
	r := New([]string{dir})
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); err != nil {
		t.Fatalf("Resolve of a known device beside a broken spec: %v", err)
	}
	for _, tt := range []struct {
		names []string
		want  []string
	}{
		{[]string{"crib.test/fake=nope"}, []string{`"crib.test/fake=nope"`, dir, "broken.json"}},
		{[]string{"crib.test/fake=fake0", "other.vendor/gpu=0"}, []string{`"other.vendor/gpu=0"`}},
	} {
		_, err := r.Resolve(tt.names)
		if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("Resolve(%q) = %v, want InvalidArgument", tt.names, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%q) = %q, want it to name %s", tt.names, err, w)
			}
		}
	}
}

// A device whose host node is missing is refused by Resolve, before its
// caller makes anything.
func TestResolveMissingHostNode(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ghost.json"), `{"cdiVersion":"0.6.0","kind":"crib.test/ghost",
"devices":[{"name":"g0","containerEdits":{"deviceNodes":[{"path":"/dev/crib-ghost-0"}]}}]}`)
	_, err := New([]string{dir}).Resolve([]string{"crib.test/ghost=g0"})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), `"crib.test/ghost=g0"`) {
		t.Fatalf("Resolve = %v, want InvalidArgument naming crib.test/ghost=g0", err)
	}
}

// The directories are read again at each Resolve: a spec added (or
// changed) after the first is seen at once.
func TestResolveSeesNewSpecs(t *testing.T) {
	dir := t.TempDir()
	r := New([]string{dir})
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Resolve before the spec exists = %v, want InvalidArgument", err)
	}
	writeFile(t, filepath.Join(dir, "fake.yaml"), fakeSpec)
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); err != nil {
		t.Fatalf("Resolve after the spec was written: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "fake.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Resolve after the spec was removed = %v, want InvalidArgument", err)
	}
}

// A directory that does not exist yet is no error, and is read once it
// does.
func TestResolveDirMadeLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cdi")
	r := New([]string{dir})
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Resolve = %v, want InvalidArgument", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "fake.yaml"), fakeSpec)
	if _, err := r.Resolve([]string{"crib.test/fake=fake0"}); err != nil {
		t.Fatalf("Resolve after the directory was made: %v", err)
	}
}

// A later directory's definition of a device replaces an earlier one's.
func TestLaterDirWins(t *testing.T) {
	static, dynamic := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(static, "fake.yaml"), fakeSpec)
	writeFile(t, filepath.Join(dynamic, "fake.yaml"), strings.ReplaceAll(fakeSpec, "FAKE_DEVICE=fake0", "FAKE_DEVICE=dynamic"))
	ds, err := New([]string{static, dynamic}).Resolve([]string{"crib.test/fake=fake0"})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	spec := baseSpec()
	if err := ds.Apply(spec); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !slices.Contains(spec.Process.Env, "FAKE_DEVICE=dynamic") {
		t.Errorf("env = %q, want the later directory's FAKE_DEVICE=dynamic", spec.Process.Env)
	}
}

func TestNoDirs(t *testing.T) {
	if ds, err := New(nil).Resolve(nil); ds != nil || err != nil {
		t.Fatalf("Resolve(nil) = %v, %v; want nothing", ds, err)
	}
	_, err := New(nil).Resolve([]string{"crib.test/fake=fake0"})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "crib.test/fake=fake0") {
		t.Fatalf("Resolve without directories = %v, want InvalidArgument naming the device", err)
	}
	var nilRegistry *Registry
	if _, err := nilRegistry.Resolve([]string{"crib.test/fake=fake0"}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Resolve on a nil registry = %v, want InvalidArgument", err)
	}
	var none *Devices
	spec := baseSpec()
	if err := none.Apply(spec); err != nil || len(spec.Linux.Devices) != 0 {
		t.Fatalf("nil Devices edited the spec: %v, %+v", err, spec.Linux)
	}
}

func TestAnnotated(t *testing.T) {
	got, err := Annotated(map[string]string{
		"cdi.k8s.io/b":       "crib.test/fake=fake1",
		"cdi.k8s.io/a":       "crib.test/fake=fake0, vendor.example/gpu=0",
		"io.kubernetes.else": "not/a=cdi device",
	})
	if err != nil {
		t.Fatalf("Annotated: %v", err)
	}
	if want := []string{"crib.test/fake=fake0", "vendor.example/gpu=0", "crib.test/fake=fake1"}; !slices.Equal(got, want) {
		t.Errorf("Annotated = %q, want %q", got, want)
	}
	_, err = Annotated(map[string]string{"cdi.k8s.io/x": "fake0"})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "cdi.k8s.io/x") || !strings.Contains(err.Error(), `"fake0"`) {
		t.Errorf("Annotated with an unqualified name = %v, want InvalidArgument naming the annotation and the name", err)
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"crib.test/fake=fake0": true,
		"nvidia.com/gpu=all":   true,
		"fake0":                false,
		"crib.test/fake":       false,
		"crib.test/fake=":      false,
		"":                     false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
