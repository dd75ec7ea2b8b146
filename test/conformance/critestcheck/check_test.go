package main

import (
	"strings"
	"testing"
)

const list = `# a comment
pass A spec
skip B spec -- no AppArmor on this kernel (critest: AppArmor is disabled)
pass|skip:userNamespaces C spec
fail D spec -- issue 99
`

func TestParseExpectedRefusesBadLines(t *testing.T) {
	for _, bad := range []string{
		"",
		"pass",
		"skip B spec",
		"fail D spec",
		"maybe A spec",
		"pass|skip:teleport A spec",
		"pass A spec\npass A spec",
	} {
		if _, err := parseExpected(bad); err == nil {
			t.Errorf("parseExpected(%q) = nil error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	expected, err := parseExpected(list)
	if err != nil {
		t.Fatal(err)
	}
	good := func() []spec {
		return []spec{
			{name: "BeforeSuite", kind: "BeforeSuite", state: "passed"},
			{name: "A spec", kind: "It", state: "passed"},
			{name: "B spec", kind: "It", state: "skipped", message: "AppArmor is disabled"},
			{name: "C spec", kind: "It", state: "passed"},
			{name: "D spec", kind: "It", state: "failed", message: "boom"},
		}
	}
	userns := map[string]bool{"userNamespaces": true}
	for _, tc := range []struct {
		name     string
		edit     func([]spec) []spec
		features map[string]bool
		required []string
		exit     int
		partial  bool
		want     []string // substrings of the problems, in order; none: clean
	}{
		{name: "as listed", features: userns, exit: 1},
		{name: "feature off: the gated spec skips", features: map[string]bool{}, exit: 1,
			edit: func(s []spec) []spec { s[3].state, s[3].message = "skipped", "no userns"; return s }},
		{name: "feature off but the spec ran", features: map[string]bool{}, exit: 1,
			want: []string{"passed C spec, want skip (crib reports userNamespaces: false)"}},
		{name: "feature on but the spec skipped", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[3].state = "skipped"; return s },
			want: []string{"skipped C spec, want pass"}},
		{name: "a required feature is missing", features: userns, required: []string{"recursiveReadOnlyMounts"}, exit: 1,
			want: []string{"does not report recursiveReadOnlyMounts"}},
		{name: "a listed skip skips for another cause", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[2].message = "something else"; return s },
			want: []string{`skipped B spec for "something else"`}},
		{name: "a pass that starts to skip", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[1].state = "skipped"; return s },
			want: []string{"skipped A spec, want pass"}},
		{name: "timed out", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[1].state = "timedout"; return s },
			want: []string{"timedout A spec, want pass", "critest exited with status 1"}},
		{name: "panicked", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[1].state = "panicked"; return s },
			want: []string{"panicked A spec, want pass", "critest exited with status 1"}},
		{name: "a known failure passes now", features: userns,
			edit: func(s []spec) []spec { s[4].state = "passed"; return s },
			want: []string{"passed D spec, want fail"}},
		{name: "a suite node failed", features: userns, exit: 1,
			edit: func(s []spec) []spec { s[0].state = "failed"; return s },
			want: []string{"BeforeSuite failed", "critest exited with status 1"}},
		{name: "a listed spec did not run", features: userns, exit: 1,
			edit: func(s []spec) []spec { return s[:2] },
			want: []string{"did not run: B spec", "did not run: C spec", "did not run: D spec", "critest exited with status 1"}},
		{name: "narrowed run", features: userns, partial: true,
			edit: func(s []spec) []spec { return s[:2] }},
		{name: "an unlisted spec", features: userns, exit: 1,
			edit: func(s []spec) []spec { return append(s, spec{name: "E spec", kind: "It", state: "passed"}) },
			want: []string{"passed E spec, a spec the list does not have"}},
		{name: "exit status without a failure (interrupted, killed)", features: userns, exit: 124,
			edit: func(s []spec) []spec { return s[:4] },
			want: []string{"did not run: D spec", "critest exited with status 124"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs := good()
			if tc.edit != nil {
				specs = tc.edit(specs)
			}
			problems, _ := check(expected, specs, tc.features, tc.required, tc.exit, tc.partial)
			if len(problems) != len(tc.want) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], w)
				}
			}
		})
	}
}

func TestParseFeatures(t *testing.T) {
	// As crictl 1.36 writes it.
	info := `{"config":{"cgroupDriver":"cgroupfs"},"features":{"supplemental_groups_policy":true},
		"runtimeHandlers":[{"features":{"recursive_read_only_mounts":false,"user_namespaces":true}},
		{"features":{"recursive_read_only_mounts":true,"user_namespaces":true},"name":"runc"}]}`
	got, err := parseFeatures([]byte(info))
	if err != nil {
		t.Fatal(err)
	}
	if !got["userNamespaces"] || got["recursiveReadOnlyMounts"] || !got["supplementalGroupsPolicy"] {
		t.Errorf("features = %v, want the default handler's and the runtime's", got)
	}
}
