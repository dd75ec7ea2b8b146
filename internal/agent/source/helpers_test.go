package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFile writes content (with tabs trimmed from a raw string's
// indentation left alone) to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// podYAML is a minimal valid pod.
func podYAML(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: app\n    image: " + image + "\n"
}

func podNames(s Snapshot) []string {
	var names []string
	for _, p := range s.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

func errorMessages(s Snapshot) []string {
	var msgs []string
	for _, e := range s.Errors {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("message %q does not contain %q", got, w)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
