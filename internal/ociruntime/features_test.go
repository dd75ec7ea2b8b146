package ociruntime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The parts crib reads of what crun 1.21 (built without CRIU) and runc
// 1.5.2 print for `features`.
const (
	crunFeatures = `{"ociVersionMin":"1.0.0","ociVersionMax":"1.1.0+dev","mountOptions":["rw","rro","idmap","ro"],
"linux":{"mountExtensions":{"idmap":{"enabled":true}}},
"annotations":{"org.opencontainers.runc.checkpoint.enabled":"false","run.oci.crun.checkpoint.enabled":"false","run.oci.crun.version":"1.21"}}`
	runcFeatures = `{"ociVersionMin":"1.0.0","mountOptions":["rro","ro"],
"linux":{"mountExtensions":{"idmap":{"enabled":true}}},
"annotations":{"org.opencontainers.runc.checkpoint.enabled":"true","org.opencontainers.runc.version":"1.5.2"}}`
)

func TestFeaturesOfCrunAndRunc(t *testing.T) {
	for _, tc := range []struct {
		name, doc     string
		checkpointing bool
	}{
		{"crun without CRIU", crunFeatures, false},
		{"runc", runcFeatures, true},
		{"a runtime that does not say", `{"mountOptions":["rro"],"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Features
			if err := json.Unmarshal([]byte(tc.doc), &f); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(f.MountOptions, "rro") || !f.Linux.MountExtensions.IDMap.Enabled {
				t.Errorf("rro %v, idmap %v: want both", slices.Contains(f.MountOptions, "rro"), f.Linux.MountExtensions.IDMap.Enabled)
			}
			missing := f.CheckpointMissing("/usr/bin/x")
			if tc.checkpointing != (missing == "") {
				t.Errorf("CheckpointMissing = %q, want checkpointing %v", missing, tc.checkpointing)
			}
			if missing != "" && !strings.Contains(missing, "/usr/bin/x") {
				t.Errorf("CheckpointMissing = %q, does not name the runtime", missing)
			}
		})
	}
}
