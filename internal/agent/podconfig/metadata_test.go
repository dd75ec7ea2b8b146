package podconfig

import "testing"

func TestMetadataField(t *testing.T) {
	pod := testPod()
	pod.Labels["tier"] = `"front"`
	pod.Annotations["a.b/c"] = "x\ny"
	tests := []struct {
		path   string
		want   string
		wantOK bool
	}{
		{"metadata.name", "web", true},
		{"metadata.namespace", "default", true},
		{"metadata.uid", "1234-abcd", true},
		{"metadata.labels", "app=\"web\"\ntier=\"\\\"front\\\"\"", true},
		{"metadata.annotations", "a.b/c=\"x\\ny\"\nnote=\"hi\"", true},
		{"metadata.labels['app']", "web", true},
		{"metadata.labels['nope']", "", true},
		{"metadata.annotations['a.b/c']", "x\ny", true},
		{"metadata.labels['']", "", false},
		{"metadata.labels['app'", "", false},
		{"metadata.generateName", "", false},
		{"spec.nodeName", "", false},
	}
	for _, tt := range tests {
		got, ok := MetadataField(pod, tt.path)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("MetadataField(%q) = %q, %t; want %q, %t", tt.path, got, ok, tt.want, tt.wantOK)
		}
	}
}
