package userns

import (
	"os"
	"path/filepath"
	"testing"
)

func newManager(t *testing.T, root string, node Range) *Manager {
	t.Helper()
	m, err := New(root, node, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEnsurePersistsAndLoadRecovers(t *testing.T) {
	root := t.TempDir()
	node := Range{First: BlockSize, Length: 4 * BlockSize}
	m := newManager(t, root, node)
	a, err := m.Ensure("pod-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Ensure("pod-b")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two pods share %s", a)
	}
	data, err := os.ReadFile(filepath.Join(root, "pod-a", FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
	if string(data) != want {
		t.Fatalf("mapping file:\n%s\nwant\n%s", data, want)
	}
	if again, err := m.Ensure("pod-a"); err != nil || again != a {
		t.Fatalf("Ensure again: %s, %v; want %s", again, err, a)
	}

	// A restarted agent: a new Manager reads the files back.
	m2 := newManager(t, root, node)
	for uid, r := range map[string]Range{"pod-a": a, "pod-b": b} {
		if got, ok := m2.Get(uid); !ok || got != r {
			t.Fatalf("after Load %s holds %s %v, want %s", uid, got, ok, r)
		}
	}
	c, err := m2.Ensure("pod-c")
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c == b {
		t.Fatalf("a new pod got %s, held by a pod from before the restart", c)
	}
}

func TestLoadSkipsUnusableFiles(t *testing.T) {
	root := t.TempDir()
	node := Range{First: BlockSize, Length: 2 * BlockSize}
	files := map[string]string{
		// A temporary file of a write a crash cut short is not the file.
		"half/.userns-123": `{"uidMappings":[{"hostId":65536`,
		"torn/userns":      `{"uidMappings":[{"hostId":65536`,
		"outside/userns":   `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
		"differ/userns":    `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
		"notroot/userns":   `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
		"good/userns":      `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
		"novolume/other":   "",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, root, node)
	for _, uid := range []string{"half", "torn", "outside", "differ", "notroot", "novolume"} {
		if r, ok := m.Get(uid); ok {
			t.Errorf("%s holds %s from an unusable file", uid, r)
		}
	}
	if r, ok := m.Get("good"); !ok || r.First != 131072 {
		t.Fatalf("good holds %s %v, want 131072+65536", r, ok)
	}
	// Only the block no valid file holds is left.
	r, err := m.Ensure("new")
	if err != nil || r.First != BlockSize {
		t.Fatalf("new got %s, %v; want %d", r, err, BlockSize)
	}
	if _, err := m.Ensure("newer"); err == nil {
		t.Fatal("a third pod got a block of a two-block range")
	}
}

func TestReleaseAfterTheDirectoryGoes(t *testing.T) {
	root := t.TempDir()
	m := newManager(t, root, Range{First: BlockSize, Length: BlockSize})
	r, err := m.Ensure("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure("b"); err == nil {
		t.Fatal("b got a block while a holds the only one")
	}
	if _, err := os.Stat(filepath.Join(root, "b", FileName)); !os.IsNotExist(err) {
		t.Fatalf("a failed allocation left a mapping file: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	m.Release("a")
	got, err := m.Ensure("b")
	if err != nil || got != r {
		t.Fatalf("b got %s, %v; want a's freed %s", got, err, r)
	}
}

func TestLoadWithoutRoot(t *testing.T) {
	m := newManager(t, filepath.Join(t.TempDir(), "absent"), DefaultRange)
	if _, ok := m.Get("x"); ok {
		t.Fatal("a pod holds a range with no pod directories")
	}
}

func TestEnsureRefusesPathUIDs(t *testing.T) {
	m := newManager(t, t.TempDir(), DefaultRange)
	for _, uid := range []string{"", ".", "..", "a/b"} {
		if _, err := m.Ensure(uid); err == nil {
			t.Errorf("uid %q accepted", uid)
		}
	}
}
