package source

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
)

func TestLoadFormats(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		content    string
		pods       []string
		configMaps []string
		secrets    []string
	}{
		{
			name:    "yaml",
			file:    "web.yaml",
			content: podYAML("web", "nginx:1.27"),
			pods:    []string{"default/web"},
		},
		{
			name:    "yml extension and namespace",
			file:    "web.yml",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: kube-system\nspec:\n  containers:\n  - name: app\n    image: nginx\n",
			pods:    []string{"kube-system/web"},
		},
		{
			name:    "json",
			file:    "web.json",
			content: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`,
			pods:    []string{"default/web"},
		},
		{
			name: "json stream",
			file: "two.json",
			content: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"v"}}`,
			pods:       []string{"default/a"},
			configMaps: []string{"default/cfg"},
		},
		{
			name: "multi-document with leading and trailing separators",
			file: "all.yaml",
			content: "---\n" + podYAML("b", "busybox") + "--- # the config\n" + podYAML("a", "busybox") +
				"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n" +
				"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  key: s3cret\n---\n# nothing\n",
			pods:       []string{"default/a", "default/b"},
			configMaps: []string{"default/cfg"},
			secrets:    []string{"default/tls"},
		},
		{
			name: "List of mixed kinds",
			file: "list.yaml",
			content: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec:
    containers: [{name: app, image: nginx}]
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg, namespace: other}
`,
			pods:       []string{"default/web"},
			configMaps: []string{"other/cfg"},
		},
		{
			name: "PodList items without kind",
			file: "podlist.yaml",
			content: `apiVersion: v1
kind: PodList
metadata: {resourceVersion: "1"}
items:
- metadata: {name: one}
  spec:
    containers: [{name: app, image: nginx}]
- metadata: {name: two}
  spec:
    containers: [{name: app, image: nginx}]
`,
			pods: []string{"default/one", "default/two"},
		},
		{
			name:    "empty file",
			file:    "empty.yaml",
			content: "# nothing here yet\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tt.file, tt.content)
			snap := Load(dir, Options{NodeName: "node1"})
			if len(snap.Errors) > 0 {
				t.Fatalf("errors: %v", errorMessages(snap))
			}
			if diff := cmp.Diff(tt.pods, podNames(snap)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.configMaps, sortedKeys(snap.ConfigMaps)); diff != "" {
				t.Errorf("configmaps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.secrets, sortedKeys(snap.Secrets)); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
			for _, p := range snap.Pods {
				if p.APIVersion != "v1" || p.Kind != "Pod" {
					t.Errorf("pod %s type meta %q %q", p.Name, p.APIVersion, p.Kind)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the file's error after its path
	}{
		{
			name:    "unknown field names its path",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    imagee: nginx\n",
			want:    []string{`pod "web": `, `unknown field "spec.containers[0].imagee"`},
		},
		{
			name:    "field names are case-sensitive",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    Image: nginx\n",
			want:    []string{`unknown field "spec.containers[0].Image"`},
		},
		{
			name:    "unknown top-level field",
			content: podYAML("web", "nginx") + "extra: 1\n",
			want:    []string{`unknown field "extra"`},
		},
		{
			name:    "duplicate yaml key",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  name: web2\n",
			want:    []string{`key "name" already set`},
		},
		{
			name:    "wrong apiVersion",
			content: "apiVersion: apps/v1\nkind: Pod\nmetadata:\n  name: web\n",
			want:    []string{`apiVersion: unsupported value "apps/v1"`},
		},
		{
			name:    "missing apiVersion",
			content: "kind: Pod\nmetadata:\n  name: web\n",
			want:    []string{`apiVersion: required value`},
		},
		{
			name:    "unsupported kind",
			content: "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: web\n",
			want:    []string{`kind: unsupported value "Deployment"`},
		},
		{
			name:    "missing kind",
			content: "apiVersion: v1\nmetadata:\n  name: web\n",
			want:    []string{`kind: required value`},
		},
		{
			name:    "not an object",
			content: "- a\n- b\n",
			want:    []string{`document is not an object`},
		},
		{
			name:    "yaml syntax",
			content: "apiVersion: v1\nkind: Pod\nmetadata: [\n",
			want:    []string{`yaml: line`},
		},
		{
			name:    "yaml syntax in a later document names the file's line",
			content: podYAML("good", "nginx") + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n    bad: indent\n",
			want:    []string{`document 2: yaml: line 14: mapping values are not allowed`},
		},
		{
			name:    "wrong type",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: nginx\n    ports:\n    - containerPort: http\n",
			want:    []string{`pod "web": `, `containerPort`},
		},
		{
			name:    "bad document in a multi-document file",
			content: podYAML("good", "nginx") + "---\n" + podYAML("bad", "nginx") + "    imagee: x\n",
			want:    []string{`pod "bad": unknown field "spec.containers[0].imagee"`},
		},
		{
			name:    "unnamed document in a multi-document file",
			content: podYAML("good", "nginx") + "---\napiVersion: v1\nkind: Secret\n",
			want:    []string{`secret at document 2: metadata.name: required value`},
		},
		{
			name:    "PodList item of another kind",
			content: "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n",
			want:    []string{`object at items[0]: kind: unsupported value "ConfigMap": must be "Pod"`},
		},
		{
			name:    "unknown field in a List item",
			content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n  date: {}\n",
			want:    []string{`configmap "x": unknown field "date"`},
		},
		{
			name:    "invalid object",
			content: podYAML("web", ""),
			want:    []string{`pod "web": spec.containers[0].image: required value`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "good.yaml", podYAML("other", "nginx"))
			path := writeFile(t, dir, "web.yaml", tt.content)
			snap := Load(dir, Options{})
			if diff := cmp.Diff([]string{"default/other"}, podNames(snap)); diff != "" {
				t.Errorf("the good file's pods (-want +got):\n%s", diff)
			}
			if len(snap.Errors) != 1 {
				t.Fatalf("want one error, got %v", errorMessages(snap))
			}
			fe := snap.Errors[0]
			if fe.Path != path {
				t.Errorf("error path %q, want %q", fe.Path, path)
			}
			msg := fe.Error()
			mustContain(t, msg, append([]string{path + ": "}, tt.want...)...)
			if !errdefs.IsInvalidArgument(fe) {
				t.Errorf("error %q is not InvalidArgument", msg)
			}
			if _, err := LoadFile(path, Options{}); err == nil || err.Error() != msg {
				t.Errorf("LoadFile error %v, want %q", err, msg)
			}
		})
	}
}

func TestLoadSkipsNonManifests(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", podYAML("web", "nginx"))
	for _, name := range []string{".hidden.yaml", "web.yaml~", ".#web.yaml", ".web.yaml.swp", "notes.txt", "#web.yaml#"} {
		writeFile(t, dir, name, "not: [a manifest")
	}
	sub := filepath.Join(dir, "sub.yaml")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "inner.yaml", podYAML("inner", "nginx"))
	if err := os.Symlink(filepath.Join(dir, "web.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	snap := Load(dir, Options{})
	// The symlink is read as a file of its own, so its pod is a duplicate.
	if diff := cmp.Diff([]string{"default/web"}, podNames(snap)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if len(snap.Errors) != 1 || snap.Errors[0].Path != filepath.Join(dir, "web.yaml") {
		t.Errorf("want only web.yaml (after link.yaml) rejected as a duplicate, got %v", errorMessages(snap))
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	snap := Load(dir, Options{})
	if len(snap.Pods) != 0 || len(snap.Errors) != 1 {
		t.Fatalf("got pods %v errors %v", podNames(snap), errorMessages(snap))
	}
	if !errdefs.IsNotFound(snap.Errors[0]) || !errors.Is(snap.Errors[0], os.ErrNotExist) {
		t.Errorf("error %v is not NotFound", snap.Errors[0])
	}
	if snap.ConfigMaps == nil || snap.Secrets == nil {
		t.Error("maps must not be nil")
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "pod.txt", podYAML("web", "nginx")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n")
	snap, err := LoadFile(path, Options{NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default/web"}, podNames(snap)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if _, ok := snap.ConfigMaps["default/cfg"]; !ok {
		t.Errorf("configmap missing: %v", snap.ConfigMaps)
	}
	if got := snap.Pods[0].Annotations[AnnotationConfigFile]; got != path {
		t.Errorf("config file annotation %q, want %q", got, path)
	}
	var fe *FileError
	_, err = LoadFile(filepath.Join(dir, "absent.yaml"), Options{})
	if !errors.As(err, &fe) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
