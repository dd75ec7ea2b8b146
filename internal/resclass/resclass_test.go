package resclass

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one saying %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want it to say %q", what, err, p)
		}
	}
}

// A block I/O class of the file is its OCI settings, by a plugin's name or
// by the annotations containerd reads; a class the file lacks, and every
// class with no file, is an error naming the class and what is missing.
func TestBlockIO(t *testing.T) {
	file := writeFile(t, "blockio.yaml", "Classes:\n  gold:\n    - Weight: \"200\"\n  bronze:\n    - Weight: \"50\"\n")
	c, err := Load(file, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BlockIO("gold")
	if err != nil || b.Weight == nil || *b.Weight != 200 {
		t.Fatalf("BlockIO(gold) = %+v, %v; want weight 200", b, err)
	}
	_, err = c.BlockIO("platinum")
	wantErr(t, "an unknown class", err, `"platinum"`, file, "bronze, gold")

	for _, a := range []struct {
		name     string
		ctr, pod map[string]string
		want     uint16
	}{
		{"container annotation", map[string]string{"io.kubernetes.cri.blockio-class": "gold"}, nil, 200},
		{"pod annotation", nil, map[string]string{"blockio.resources.beta.kubernetes.io/pod": "bronze"}, 50},
		{"pod annotation for the container", nil, map[string]string{
			"blockio.resources.beta.kubernetes.io/pod":           "bronze",
			"blockio.resources.beta.kubernetes.io/container.app": "gold",
		}, 200},
	} {
		got, err := c.FromAnnotations("app", a.ctr, a.pod)
		if err != nil || got.BlockIO == nil || *got.BlockIO.Weight != a.want {
			t.Errorf("%s: %+v, %v; want weight %d", a.name, got.BlockIO, err, a.want)
			continue
		}
		spec := &specs.Spec{}
		got.Apply(spec)
		if spec.Linux.Resources.BlockIO != got.BlockIO {
			t.Errorf("%s: Apply left %+v", a.name, spec.Linux)
		}
	}
	if got, err := c.FromAnnotations("app", map[string]string{"other": "x"}, nil); err != nil || got.BlockIO != nil || got.RDT != nil {
		t.Errorf("no class annotation: %+v, %v", got, err)
	}

	var none *Classes
	_, err = none.BlockIO("gold")
	wantErr(t, "no classes", err, `"gold"`, "no blockio_config_file is configured")
	_, err = none.FromAnnotations("app", nil, map[string]string{"blockio.resources.beta.kubernetes.io/pod": "gold"})
	wantErr(t, "an annotation with no classes", err, "block I/O class annotation", "no blockio_config_file")
}

// A block I/O file that cannot be read, or holds a bad value, fails the
// load naming the key.
func TestBlockIOBadFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), "", nil)
	wantErr(t, "a missing file", err, "blockio_config_file", "missing.yaml")
	_, err = Load(writeFile(t, "bad.yaml", "Classes:\n  gold:\n    - Weight: \"5\"\n"), "", nil)
	wantErr(t, "a weight below 10", err, "blockio_config_file", "Weight")
	_, err = Load(writeFile(t, "unknown.yaml", "Clases: {}\n"), "", nil)
	wantErr(t, "an unknown field", err, "blockio_config_file")
}

// An RDT class with no rdt_config_file, or on a host without resctrl, is
// an error naming which; so is an RDT annotation. A container that names
// none is not touched.
func TestRDTUnavailable(t *testing.T) {
	c, err := Load("", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RDT("gold")
	wantErr(t, "no file", err, `RDT class "gold"`, "no rdt_config_file is configured")
	_, err = c.FromAnnotations("app", map[string]string{"io.kubernetes.cri.rdt-class": "gold"}, nil)
	wantErr(t, "a container annotation", err, "RDT class annotation", "no rdt_config_file")
	_, err = c.FromAnnotations("app", nil, map[string]string{"rdt.resources.beta.kubernetes.io/container.app": "gold"})
	wantErr(t, "a pod annotation", err, "RDT class annotation")
	if got, err := c.FromAnnotations("app", nil, map[string]string{"rdt.resources.beta.kubernetes.io/container.other": "gold"}); err != nil || got.RDT != nil {
		t.Errorf("another container's annotation: %+v, %v", got, err)
	}

	if ResctrlMounted() {
		t.Log("resctrl is mounted: the no-resctrl case is not exercised")
		return
	}
	file := writeFile(t, "rdt.yaml", "partitions: {}\n")
	c, err = Load("", file, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RDT("gold")
	wantErr(t, "no resctrl", err, `RDT class "gold"`, file, "resctrl is not mounted")
	err = CheckRDT(&specs.Spec{Linux: &specs.Linux{IntelRdt: &specs.LinuxIntelRdt{ClosID: "gold"}}})
	wantErr(t, "a CLOS without resctrl", err, "resctrl is not mounted")
	if err := CheckRDT(&specs.Spec{Linux: &specs.Linux{}}); err != nil {
		t.Errorf("no RDT settings: %v", err)
	}
}
