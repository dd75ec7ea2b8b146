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

func TestRestoreMissing(t *testing.T) {
	runc := func(v string) Features {
		return Features{Annotations: map[string]string{"org.opencontainers.runc.version": v}}
	}
	for _, tc := range []struct {
		name     string
		f        Features
		cgroupV2 bool
		restores bool
	}{
		{"runc 1.1 on cgroup v1", runc("1.1.5+ds1"), false, true},
		{"runc 1.1 on cgroup v2", runc("1.1.5+ds1"), true, false},
		{"runc 1.0 on cgroup v2", runc("1.0.0-rc93"), true, false},
		{"runc 1.2 on cgroup v2", runc("1.2.0"), true, true},
		{"runc 1.5.2 on cgroup v2", runc("1.5.2"), true, true},
		{"runc 2 on cgroup v2", runc("2.0.0"), true, true},
		{"an unreadable version", runc("dev"), true, true},
		{"crun, which does not say", Features{Annotations: map[string]string{"run.oci.crun.checkpoint.enabled": "true"}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing := tc.f.RestoreMissing("/usr/sbin/runc", tc.cgroupV2)
			if tc.restores != (missing == "") {
				t.Fatalf("RestoreMissing = %q, want restoring %v", missing, tc.restores)
			}
			if missing != "" && !strings.Contains(missing, "/usr/sbin/runc") {
				t.Errorf("RestoreMissing = %q, does not name the runtime", missing)
			}
		})
	}
}
