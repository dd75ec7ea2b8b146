package volume

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMap(name string, data map[string]string, binary map[string][]byte) map[string]*corev1.ConfigMap {
	return map[string]*corev1.ConfigMap{"default/" + name: {
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Data:       data,
		BinaryData: binary,
	}}
}

// entries lists a directory's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// versionDirs lists the writer's timestamped directories in dir.
func versionDirs(t *testing.T, dir string) []string {
	var out []string
	for _, n := range entries(t, dir) {
		if strings.HasPrefix(n, "..") && n != dataLink {
			out = append(out, n)
		}
	}
	return out
}

func TestConfigMapLayoutAndUpdate(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	pod := testPod("uid-cm", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
	}}))
	removeAtCleanup(t, m, "uid-cm")

	v1 := configMap("app", map[string]string{"a.conf": "one", "b.conf": "bee"}, map[string][]byte{"blob": {0, 1, 2}})
	paths, err := m.Prepare(ctx, pod, v1, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["conf"]
	if got := readFile(t, filepath.Join(dir, "a.conf")); got != "one" {
		t.Errorf("a.conf = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "blob")); got != "\x00\x01\x02" {
		t.Errorf("blob = %q", got)
	}
	if got := perm(t, filepath.Join(dir, "a.conf")); got != 0o644 {
		t.Errorf("default mode %v, want 0644", got)
	}
	// User-visible names are symlinks through ..data into one version dir.
	if target, err := os.Readlink(filepath.Join(dir, "a.conf")); err != nil || target != "..data/a.conf" {
		t.Errorf("a.conf links to %q (%v), want ..data/a.conf", target, err)
	}
	first, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{first}, versionDirs(t, dir)); diff != "" {
		t.Errorf("version dirs (-want +got):\n%s", diff)
	}

	// Unchanged data: nothing is rewritten.
	if _, err := m.Prepare(ctx, pod, v1, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, dataLink)); again != first {
		t.Errorf("unchanged data rewrote the volume: ..data %q -> %q", first, again)
	}

	// An open file of the old version keeps its content; the new version
	// appears at once and the old one's files vanish.
	old, err := os.Open(filepath.Join(dir, "b.conf"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	v2 := configMap("app", map[string]string{"a.conf": "two", "c.conf": "sea"}, nil)
	if _, err := m.Prepare(ctx, pod, v2, nil); err != nil {
		t.Fatal(err)
	}
	second, _ := os.Readlink(filepath.Join(dir, dataLink))
	if second == first {
		t.Fatal("..data was not swapped")
	}
	if got := readFile(t, filepath.Join(dir, "a.conf")); got != "two" {
		t.Errorf("a.conf after update = %q, want two", got)
	}
	if got := readFile(t, filepath.Join(dir, "c.conf")); got != "sea" {
		t.Errorf("c.conf after update = %q, want sea", got)
	}
	want := []string{dataLink, second, "a.conf", "c.conf"}
	sort.Strings(want)
	if diff := cmp.Diff(want, entries(t, dir)); diff != "" {
		t.Errorf("volume entries after update (-want +got):\n%s", diff)
	}
	buf := make([]byte, 8)
	if n, _ := old.Read(buf); string(buf[:n]) != "bee" {
		t.Errorf("open old file reads %q, want bee", buf[:n])
	}
}

func TestConfigMapItemsAndModes(t *testing.T) {
	m, _ := newTestManager(t)
	pod := testPod("uid-items", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
		DefaultMode:          ptr(int32(0o600)),
		Items: []corev1.KeyToPath{
			{Key: "a", Path: "nested/deep/a.txt"},
			{Key: "b", Path: "b.sh", Mode: ptr(int32(0o755))},
		},
	}}))
	removeAtCleanup(t, m, "uid-items")
	paths, err := m.Prepare(context.Background(), pod, configMap("app", map[string]string{"a": "A", "b": "B", "unused": "U"}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["conf"]
	if got := readFile(t, filepath.Join(dir, "nested/deep/a.txt")); got != "A" {
		t.Errorf("nested/deep/a.txt = %q", got)
	}
	if got := perm(t, filepath.Join(dir, "nested/deep/a.txt")); got != 0o600 {
		t.Errorf("defaultMode gave %v, want 0600", got)
	}
	if got := perm(t, filepath.Join(dir, "b.sh")); got != 0o755 {
		t.Errorf("item mode gave %v, want 0755", got)
	}
	if got := perm(t, filepath.Join(dir, "nested/deep")); got != 0o755 {
		t.Errorf("nested dir mode %v, want 0755", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "unused")); !os.IsNotExist(err) {
		t.Errorf("a key not in items was projected: %v", err)
	}
}

func TestConfigMapMissing(t *testing.T) {
	ctx := context.Background()
	t.Run("optional object", func(t *testing.T) {
		m, _ := newTestManager(t)
		pod := testPod("uid-opt", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr(true),
		}}))
		removeAtCleanup(t, m, "uid-opt")
		paths, err := m.Prepare(ctx, pod, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range entries(t, paths["conf"]) {
			if !strings.HasPrefix(n, "..") {
				t.Errorf("optional missing configMap shows %q", n)
			}
		}
		// It appears later: the next Prepare fills the volume.
		if _, err := m.Prepare(ctx, pod, configMap("absent", map[string]string{"k": "v"}, nil), nil); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(paths["conf"], "k")); got != "v" {
			t.Errorf("k = %q after the configMap appeared", got)
		}
	})
	t.Run("required object", func(t *testing.T) {
		m, _ := newTestManager(t)
		pod := testPod("uid-req", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "absent"},
		}}))
		removeAtCleanup(t, m, "uid-req")
		_, err := m.Prepare(ctx, pod, configMap("other", nil, nil), nil)
		wantErrClass(t, err, errdefs.ErrNotFound, `"conf"`, "default/absent")
	})
	t.Run("required key", func(t *testing.T) {
		m, _ := newTestManager(t)
		pod := testPod("uid-key", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
			Items:                []corev1.KeyToPath{{Key: "nokey", Path: "x"}},
		}}))
		removeAtCleanup(t, m, "uid-key")
		_, err := m.Prepare(ctx, pod, configMap("app", map[string]string{"k": "v"}, nil), nil)
		wantErrClass(t, err, errdefs.ErrNotFound, `"conf"`, "nokey")
	})
}

func TestBadItemPaths(t *testing.T) {
	for _, p := range []string{"../escape", "/etc/passwd", "..data", "a/../../b", "a//b", "./a", "a/", ""} {
		t.Run(p, func(t *testing.T) {
			m, root := newTestManager(t)
			pod := testPod("uid-bad", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
				Items:                []corev1.KeyToPath{{Key: "k", Path: p}},
			}}))
			removeAtCleanup(t, m, "uid-bad")
			_, err := m.Prepare(context.Background(), pod, configMap("app", map[string]string{"k": "v"}, nil), nil)
			wantErrClass(t, err, errdefs.ErrInvalidArgument, `"conf"`)
			if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape")); !os.IsNotExist(err) {
				t.Errorf("a file escaped the volume: %v", err)
			}
		})
	}
	t.Run("file and directory clash", func(t *testing.T) {
		m, _ := newTestManager(t)
		pod := testPod("uid-clash", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
			Items:                []corev1.KeyToPath{{Key: "k", Path: "a"}, {Key: "k", Path: "a/b"}},
		}}))
		removeAtCleanup(t, m, "uid-clash")
		_, err := m.Prepare(context.Background(), pod, configMap("app", map[string]string{"k": "v"}, nil), nil)
		wantErrClass(t, err, errdefs.ErrInvalidArgument, `"conf"`)
	})
	t.Run("bad key without items", func(t *testing.T) {
		m, _ := newTestManager(t)
		pod := testPod("uid-badkey", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
		}}))
		removeAtCleanup(t, m, "uid-badkey")
		_, err := m.Prepare(context.Background(), pod, configMap("app", map[string]string{"..data": "v"}, nil), nil)
		wantErrClass(t, err, errdefs.ErrInvalidArgument, `"conf"`)
	})
}

func TestSecretOnTmpfs(t *testing.T) {
	requireRoot(t)
	m, _ := newTestManager(t)
	ctx := context.Background()
	pod := testPod("uid-sec", vol("creds", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "db", DefaultMode: ptr(int32(0o400)),
	}}))
	removeAtCleanup(t, m, "uid-sec")
	secrets := map[string]*corev1.Secret{"default/db": {
		Data:       map[string][]byte{"password": []byte("hunter2"), "user": []byte("old")},
		StringData: map[string]string{"user": "admin"},
	}}
	var dir string
	for range 2 {
		paths, err := m.Prepare(ctx, pod, nil, secrets)
		if err != nil {
			t.Fatal(err)
		}
		dir = paths["creds"]
	}
	mounts := mountsAt(t, dir)
	if len(mounts) != 1 || mounts[0].fsType != "tmpfs" {
		t.Fatalf("mounts at %s: %+v, want one tmpfs", dir, mounts)
	}
	if !strings.Contains(mounts[0].options, "size=16384k") {
		t.Errorf("secret tmpfs options %q, want size=16384k", mounts[0].options)
	}
	if got := readFile(t, filepath.Join(dir, "password")); got != "hunter2" {
		t.Errorf("password = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "user")); got != "admin" {
		t.Errorf("stringData did not win over data: user = %q", got)
	}
	if got := perm(t, filepath.Join(dir, "password")); got != 0o400 {
		t.Errorf("secret mode %v, want 0400", got)
	}
}

func TestDownwardAPI(t *testing.T) {
	m, _ := newTestManager(t)
	pod := testPod("uid-dw", vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			{Path: "uid", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		},
	}}))
	pod.Annotations = map[string]string{"note": `say "hi"`}
	removeAtCleanup(t, m, "uid-dw")
	paths, err := m.Prepare(context.Background(), pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"name":        "web",
		"ns":          "default",
		"uid":         "uid-dw",
		"labels":      "app=\"web\"\ntier=\"front\"",
		"app":         "web",
		"annotations": `note="say \"hi\""`,
	}
	got := map[string]string{}
	for k := range want {
		got[k] = readFile(t, filepath.Join(paths["info"], k))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("downwardAPI files (-want +got):\n%s", diff)
	}

	for _, bad := range []corev1.DownwardAPIVolumeFile{
		{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
		{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}},
	} {
		pod := testPod("uid-dw2", vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{bad}}}))
		removeAtCleanup(t, m, "uid-dw2")
		_, err := m.Prepare(context.Background(), pod, nil, nil)
		wantErrClass(t, err, errdefs.ErrInvalidArgument, `"info"`, bad.Path)
	}
}

func TestProjected(t *testing.T) {
	requireRoot(t)
	m, _ := newTestManager(t)
	pod := testPod("uid-proj", vol("all", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o440)),
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
			{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"},
				Items:                []corev1.KeyToPath{{Key: "password", Path: "secret/pw"}},
			}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "podname", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			}}},
		},
	}}))
	removeAtCleanup(t, m, "uid-proj")
	secrets := map[string]*corev1.Secret{"default/db": {Data: map[string][]byte{"password": []byte("pw")}}}
	paths, err := m.Prepare(context.Background(), pod, configMap("app", map[string]string{"conf": "c"}, nil), secrets)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["all"]
	got := map[string]string{}
	for _, p := range []string{"conf", "secret/pw", "podname"} {
		got[p] = readFile(t, filepath.Join(dir, p))
	}
	if diff := cmp.Diff(map[string]string{"conf": "c", "secret/pw": "pw", "podname": "web"}, got); diff != "" {
		t.Errorf("projected files (-want +got):\n%s", diff)
	}
	if got := perm(t, filepath.Join(dir, "secret/pw")); got != 0o440 {
		t.Errorf("projected mode %v, want 0440", got)
	}
	if ms := mountsAt(t, dir); len(ms) != 1 || ms[0].fsType != "tmpfs" {
		t.Errorf("projected volume mounts %+v, want one tmpfs", ms)
	}

	token := testPod("uid-tok", vol("token", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
	}}))
	removeAtCleanup(t, m, "uid-tok")
	_, err = m.Prepare(context.Background(), token, nil, nil)
	wantErrClass(t, err, errdefs.ErrInvalidArgument, `"token"`, "serviceAccountToken")
}

func TestUnsupportedAndInvalid(t *testing.T) {
	m, _ := newTestManager(t)
	tests := []struct {
		name     string
		pod      *corev1.Pod
		mentions []string
	}{
		{
			name:     "persistentVolumeClaim",
			pod:      testPod("uid-u1", vol("data", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}})),
			mentions: []string{`"data"`, "persistentVolumeClaim", "not supported"},
		},
		{
			name:     "nfs",
			pod:      testPod("uid-u2", vol("share", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}})),
			mentions: []string{`"share"`, "nfs"},
		},
		{
			name: "duplicate names",
			pod: testPod("uid-u3",
				vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})),
			mentions: []string{`"a"`, "twice"},
		},
		{
			name:     "volume name with a slash",
			pod:      testPod("uid-u4", vol("../x", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})),
			mentions: []string{"../x"},
		},
		{
			name:     "bad uid",
			pod:      testPod("..", vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})),
			mentions: []string{"uid"},
		},
		{
			name:     "mode out of range",
			pod:      testPod("uid-u5", vol("c", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: ptr(int32(0o4755))}})),
			mentions: []string{`"c"`, "mode"},
		},
	}
	cms := configMap("app", map[string]string{"k": "v"}, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pod.UID != ".." {
				removeAtCleanup(t, m, string(tc.pod.UID))
			}
			_, err := m.Prepare(context.Background(), tc.pod, cms, nil)
			wantErrClass(t, err, errdefs.ErrInvalidArgument, tc.mentions...)
		})
	}
	if _, err := m.Prepare(context.Background(), nil, nil, nil); !errdefs.IsInvalidArgument(err) {
		t.Errorf("Prepare(nil pod) = %v, want invalid argument", err)
	}
}

func TestAtomicWriterRepairsCrashLeftovers(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	pod := testPod("uid-crash", vol("conf", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
	}}))
	removeAtCleanup(t, m, "uid-crash")
	cms := configMap("app", map[string]string{"a": "1", "b": "2"}, nil)
	paths, err := m.Prepare(ctx, pod, cms, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["conf"]
	current, _ := os.Readlink(filepath.Join(dir, dataLink))
	// A crash after a new version was written but before the swap leaves a
	// version dir and ..data_tmp; one after the swap but before the links
	// were made leaves a name missing.
	if err := os.Mkdir(filepath.Join(dir, "..2001_01_01_00_00_00.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2001_01_01_00_00_00.1", filepath.Join(dir, dataLinkTmp)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prepare(ctx, pod, cms, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{current, dataLink, "a", "b"}
	sort.Strings(want)
	if diff := cmp.Diff(want, entries(t, dir)); diff != "" {
		t.Errorf("entries after repair (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(dir, "b")); got != "2" {
		t.Errorf("b = %q after repair", got)
	}
}

func TestFileOwner(t *testing.T) {
	requireRoot(t)
	m, _ := newTestManager(t)
	pod := testPod("uid-owner", vol("creds", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  "db",
		DefaultUser: ptr(int64(1234)),
		Items:       []corev1.KeyToPath{{Key: "k", Path: "default"}, {Key: "k", Path: "item", User: ptr(int64(4321))}},
	}}))
	removeAtCleanup(t, m, "uid-owner")
	secrets := map[string]*corev1.Secret{"default/db": {Data: map[string][]byte{"k": []byte("v")}}}
	paths, err := m.Prepare(context.Background(), pod, nil, secrets)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint32{"default": 1234, "item": 4321} {
		fi, err := os.Stat(filepath.Join(paths["creds"], name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Sys().(*syscall.Stat_t).Uid; got != want {
			t.Errorf("%s owned by %d, want %d", name, got, want)
		}
	}
}
