package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// expectation is what one spec must do.
type expectation struct {
	// state is "pass", "skip" or "fail"; with feature set, "pass" where
	// crib reports the feature and "skip" where it does not.
	state   string
	feature string
	cause   string
}

// knownFeatures are the features of crib's Status answer that decide
// whether critest runs or skips a spec.
var knownFeatures = map[string]bool{
	"userNamespaces":           true,
	"recursiveReadOnlyMounts":  true,
	"supplementalGroupsPolicy": true,
}

// parseExpected reads lines of "STATE  SPEC NAME[ -- cause]"; STATE is
// pass, skip, fail or pass|skip:FEATURE. A skip or a fail needs its cause.
func parseExpected(text string) (map[string]expectation, error) {
	out := map[string]expectation{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		state, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: no spec name after %q", i+1, state)
		}
		name, cause, _ := strings.Cut(strings.TrimSpace(rest), " -- ")
		name = strings.TrimSpace(name)
		e := expectation{state: state, cause: strings.TrimSpace(cause)}
		if f, ok := strings.CutPrefix(state, "pass|skip:"); ok {
			if !knownFeatures[f] {
				return nil, fmt.Errorf("line %d: unknown feature %q", i+1, f)
			}
			e.state, e.feature = "pass", f
		}
		switch e.state {
		case "pass":
		case "skip", "fail":
			if e.cause == "" {
				return nil, fmt.Errorf("line %d: a %s needs its cause after \" -- \"", i+1, e.state)
			}
		default:
			return nil, fmt.Errorf("line %d: unknown state %q", i+1, state)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: %q listed twice", i+1, name)
		}
		out[name] = e
	}
	if len(out) == 0 {
		return nil, errors.New("no spec listed")
	}
	return out, nil
}

// spec is one node of the run: an It, or a suite node such as BeforeSuite.
type spec struct {
	name, kind, state, message string
}

// parseReport reads ginkgo's JSON report. A spec that a --ginkgo.skip or
// focus filtered out is "skipped" with no message; it is left out, as
// pending ones are.
func parseReport(data []byte) ([]spec, error) {
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(data, &suites); err != nil {
		return nil, err
	}
	var out []spec
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType == "It" && (r.State == "pending" || r.State == "skipped" && r.Failure.Message == "") {
				continue
			}
			name := strings.TrimSpace(strings.Join(append(append([]string{}, r.ContainerHierarchyTexts...), r.LeafNodeText), " "))
			out = append(out, spec{name: name, kind: r.LeafNodeType, state: r.State, message: firstLine(r.Failure.Message)})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no spec ran")
	}
	return out, nil
}

// parseFeatures reads which features `crictl info -o json` reports: the
// runtime's, and the default handler's (the one with no name). crictl
// writes the names in snake case (user_namespaces); they are returned in
// the camel case of the list (userNamespaces).
func parseFeatures(data []byte) (map[string]bool, error) {
	var info struct {
		Features        map[string]bool `json:"features"`
		RuntimeHandlers []struct {
			Name     string          `json:"name"`
			Features map[string]bool `json:"features"`
		} `json:"runtimeHandlers"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	add := func(m map[string]bool) {
		for k, v := range m {
			out[camel(k)] = out[camel(k)] || v
		}
	}
	add(info.Features)
	for _, h := range info.RuntimeHandlers {
		if h.Name == "" {
			add(h.Features)
		}
	}
	return out, nil
}

// camel turns user_namespaces into userNamespaces.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

type tally struct{ passed, failed, skipped int }

// check compares the run with the list and critest's exit status.
func check(expected map[string]expectation, specs []spec, features map[string]bool, required []string, exit int, partial bool) ([]string, tally) {
	var problems []string
	for _, f := range required {
		if !features[f] {
			problems = append(problems, fmt.Sprintf("crib does not report %s, which this host must have", f))
		}
	}
	var counts tally
	ran := map[string]bool{}
	onlyKnownFailures := true
	for _, s := range specs {
		if s.kind != "It" {
			if s.state != "passed" && s.state != "skipped" {
				problems = append(problems, fmt.Sprintf("%s %s: %s", s.kind, s.state, s.message))
				onlyKnownFailures = false
			}
			continue
		}
		ran[s.name] = true
		switch s.state {
		case "passed":
			counts.passed++
		case "skipped":
			counts.skipped++
		default:
			counts.failed++
		}
		e, listed := expected[s.name]
		if !listed {
			problems = append(problems, fmt.Sprintf("%s %s, a spec the list does not have (add it): %s", s.state, s.name, s.message))
			if s.state != "passed" && s.state != "skipped" {
				onlyKnownFailures = false
			}
			continue
		}
		want := e.state
		if e.feature != "" && !features[e.feature] {
			want = "skip"
		}
		if !matches(want, s.state) {
			why := ""
			if e.feature != "" {
				why = fmt.Sprintf(" (crib reports %s: %t)", e.feature, features[e.feature])
			}
			problems = append(problems, fmt.Sprintf("%s %s, want %s%s: %s", s.state, s.name, want, why, s.message))
		} else if e.state == "skip" && !strings.Contains(e.cause, s.message) {
			// A listed skip must skip for its listed cause, not another one.
			problems = append(problems, fmt.Sprintf("skipped %s for %q, which its listed cause %q does not quote", s.name, s.message, e.cause))
		}
		if s.state != "passed" && s.state != "skipped" && want != "fail" {
			onlyKnownFailures = false
		}
	}
	if !partial {
		var missing []string
		for name := range expected {
			if !ran[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		for _, name := range missing {
			problems = append(problems, fmt.Sprintf("did not run: %s", name))
		}
	}
	// critest fails its exit status on any failed spec, expected or not; any
	// other cause (a time-out, a signal, a crash) is a problem of its own.
	if exit != 0 && (counts.failed == 0 || !onlyKnownFailures) {
		problems = append(problems, fmt.Sprintf("critest exited with status %d", exit))
	}
	return problems, counts
}

// matches reports whether a spec's ginkgo state is the listed one.
func matches(want, state string) bool {
	switch want {
	case "pass":
		return state == "passed"
	case "skip":
		return state == "skipped"
	case "fail":
		return state == "failed"
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
