package container

import (
	"strings"
	"testing"
)

func TestProcCgroup(t *testing.T) {
	v1 := "13:hugetlb:/\n12:cpu,cpuacct:/kubepods/pod1/c1\n9:memory:/kubepods/pod1/c1\n1:name=systemd:/\n0::/\n"
	v2 := "0::/kubepods.slice/kubepods-pod1.slice/crib-c1.scope\n"
	for _, tc := range []struct {
		name, file string
		v2         bool
		want       string
		fails      bool
	}{
		{"v1 memory", v1, false, "/kubepods/pod1/c1", false},
		{"v2 unified", v2, true, "/kubepods.slice/kubepods-pod1.slice/crib-c1.scope", false},
		// A hybrid host's empty unified line is not the v1 answer.
		{"v1 without memory", "0::/\n12:cpu:/x\n", false, "", true},
		{"v2 without unified line", "9:memory:/x\n", true, "", true},
		{"garbage", "not a cgroup file\n", true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := procCgroup(strings.NewReader(tc.file), tc.v2)
			if tc.fails {
				if err == nil {
					t.Fatalf("procCgroup = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("procCgroup = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestWithinCgroup(t *testing.T) {
	const want = "/kubepods.slice/kubepods-pod1.slice/crib-c1.scope"
	for got, within := range map[string]bool{
		want:                                  true,
		want + "/init.scope":                  true,
		want + "x":                            false, // a sibling whose name starts alike
		"/kubepods.slice/kubepods-pod1.slice": false,
		"/kubepods.slice/kubepods-pod0.slice/crib-c0.scope": false,
	} {
		if withinCgroup(got, want) != within {
			t.Errorf("withinCgroup(%q, %q) = %v, want %v", got, want, !within, within)
		}
	}
}
