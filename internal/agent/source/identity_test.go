package source

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func loadOne(t *testing.T, dir, node string) (uid types.UID, image string) {
	t.Helper()
	snap := Load(dir, Options{NodeName: node})
	if len(snap.Errors) > 0 || len(snap.Pods) != 1 {
		t.Fatalf("pods %v errors %v", podNames(snap), errorMessages(snap))
	}
	return snap.Pods[0].UID, snap.Pods[0].Spec.Containers[0].Image
}

func TestUIDStableAcrossEdits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", podYAML("web", "nginx:1"))
	uid1, _ := loadOne(t, dir, "node1")
	if len(uid1) != 32 {
		t.Errorf("uid %q is not 32 hex digits", uid1)
	}

	writeFile(t, dir, "web.yaml", podYAML("web", "nginx:2")+"    args: [--edited]\n")
	uid2, image := loadOne(t, dir, "node1")
	if image != "nginx:2" {
		t.Fatalf("edit not seen: image %q", image)
	}
	if uid2 != uid1 {
		t.Errorf("edit changed the uid: %s -> %s", uid1, uid2)
	}

	// The namespace written out or left to the default is the same pod.
	writeFile(t, dir, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\nspec:\n  containers:\n  - {name: app, image: nginx}\n")
	if uid, _ := loadOne(t, dir, "node1"); uid != uid1 {
		t.Errorf("explicit default namespace changed the uid: %s -> %s", uid1, uid)
	}

	if uid, _ := loadOne(t, dir, "node2"); uid == uid1 {
		t.Error("another node name gave the same uid")
	}

	if err := os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "moved.yaml")); err != nil {
		t.Fatal(err)
	}
	if uid, _ := loadOne(t, dir, "node1"); uid == uid1 {
		t.Error("another file gave the same uid")
	}
}

func TestUIDDistinctPerPod(t *testing.T) {
	tests := []struct{ path, namespace, name, node string }{
		{"/m/a.yaml", "default", "web", "n"},
		{"/m/b.yaml", "default", "web", "n"},
		{"/m/a.yaml", "other", "web", "n"},
		{"/m/a.yaml", "default", "web2", "n"},
		{"/m/a.yaml", "default", "web", ""},
		// Fields are delimited: moving a character between them matters.
		{"/m/a.yaml", "defaul", "tweb", "n"},
	}
	seen := map[types.UID]int{}
	for i, tt := range tests {
		uid := PodUID(tt.path, tt.namespace, tt.name, tt.node)
		if j, ok := seen[uid]; ok {
			t.Errorf("case %d and %d share uid %s", j, i, uid)
		}
		seen[uid] = i
		if again := PodUID(tt.path, tt.namespace, tt.name, tt.node); again != uid {
			t.Errorf("case %d: uid not deterministic", i)
		}
	}
}

func TestUIDIgnoresManifestUIDAndPathIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  uid: \"1234\"\n  annotations: {keep: me}\nspec:\n  containers:\n  - {name: app, image: nginx}\n")
	t.Chdir(dir)
	snap := Load(".", Options{NodeName: "n"})
	if len(snap.Pods) != 1 {
		t.Fatal(errorMessages(snap))
	}
	pod := snap.Pods[0]
	path := filepath.Join(dir, "web.yaml")
	if want := PodUID(path, "default", "web", "n"); pod.UID != want {
		t.Errorf("uid %s, want %s", pod.UID, want)
	}
	want := map[string]string{
		"keep":                 "me",
		AnnotationConfigSource: "file",
		AnnotationConfigHash:   string(pod.UID),
		AnnotationConfigFile:   path,
	}
	if diff := cmp.Diff(want, pod.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", podYAML("web", "nginx"))
	b := writeFile(t, dir, "b.yaml", podYAML("web", "nginx:2")+"---\n"+podYAML("other", "nginx"))
	// The same name in another namespace, or of another kind, is no clash.
	writeFile(t, dir, "c.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod}\nspec:\n  containers: [{name: app, image: nginx}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
	d := writeFile(t, dir, "d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")

	snap := Load(dir, Options{})
	if diff := cmp.Diff([]string{"default/web", "prod/web"}, podNames(snap)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if got := snap.Pods[0].Spec.Containers[0].Image; got != "nginx" {
		t.Errorf("default/web from the wrong file: image %q", got)
	}
	if diff := cmp.Diff([]string{"default/web"}, sortedKeys(snap.ConfigMaps)); diff != "" {
		t.Errorf("configmaps (-want +got):\n%s", diff)
	}
	want := []string{
		b + `: pod "default/web": already defined in ` + a,
		d + `: configmap "default/x": defined twice in this file`,
	}
	if diff := cmp.Diff(want, errorMessages(snap)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if !errdefs.IsAlreadyExists(snap.Errors[0]) {
		t.Errorf("%v is not AlreadyExists", snap.Errors[0])
	}

	// When the first file turns bad, the second one's pod is the pod.
	writeFile(t, dir, "a.yaml", podYAML("web", ""))
	snap = Load(dir, Options{})
	if diff := cmp.Diff([]string{"default/other", "default/web", "prod/web"}, podNames(snap)); diff != "" {
		t.Errorf("pods after a.yaml broke (-want +got):\n%s", diff)
	}
	if got := snap.Pods[1].Annotations[AnnotationConfigFile]; got != b {
		t.Errorf("default/web from %s, want %s", got, b)
	}
}

func TestSnapshotEqual(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("web", "nginx")+"    resources: {limits: {memory: 1Gi}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n")
	writeFile(t, dir, "bad.yaml", "nope: [")
	s1, s2 := Load(dir, Options{}), Load(dir, Options{})
	if s1.Pods[0] == s2.Pods[0] {
		t.Fatal("Load shared a pointer between snapshots")
	}
	if !s1.Equal(s2) {
		t.Error("two loads of the same directory differ")
	}
	writeFile(t, dir, "a.yaml", podYAML("web", "nginx")+"    resources: {limits: {memory: 2Gi}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n")
	if s3 := Load(dir, Options{}); s1.Equal(s3) {
		t.Error("a changed limit compared equal")
	}
	if s1.Equal(Snapshot{}) || !(Snapshot{}).Equal(Snapshot{ConfigMaps: map[string]*corev1.ConfigMap{}}) {
		t.Error("empty snapshot comparison")
	}
}
