// Command critestcheck reads a critest run whole and fails it unless every
// spec did what test/conformance/expected.txt says it must: passed, or
// skipped for its listed cause, or (where the spec depends on a feature
// crib reports only on some hosts) passed or skipped as crib's Status
// says. A spec that failed, panicked, timed out or was interrupted, a
// suite node that did not pass, a listed spec that did not run, a spec
// the list does not know and a non-zero exit of critest each fail the
// check.
//
//	critestcheck -expected FILE -report report.json -info info.json -exit N [-require F,...] [-partial]
//
// info.json is `crictl info -o json` of the runtime under test; -partial
// (a run narrowed by --ginkgo.focus or skip) checks only the specs that
// ran.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	expectedPath := flag.String("expected", "", "the list of specs and what each must do")
	reportPath := flag.String("report", "", "critest's ginkgo JSON report")
	infoPath := flag.String("info", "", "`crictl info -o json` of the runtime under test")
	exit := flag.Int("exit", 0, "critest's exit status")
	require := flag.String("require", "", "comma-separated features crib must report on this host (e.g. userNamespaces)")
	partial := flag.Bool("partial", false, "the run was narrowed: check only the specs that ran")
	flag.Parse()

	problems, counts, err := run(*expectedPath, *reportPath, *infoPath, *require, *exit, *partial)
	if err != nil {
		fmt.Fprintln(os.Stderr, "critestcheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println("UNEXPECTED:", p)
	}
	fmt.Printf("critest: %d passed, %d failed, %d skipped\n", counts.passed, counts.failed, counts.skipped)
	if len(problems) > 0 {
		fmt.Printf("critestcheck: %d problems against the list\n", len(problems))
		os.Exit(1)
	}
}

func run(expectedPath, reportPath, infoPath, require string, exit int, partial bool) ([]string, tally, error) {
	data, err := os.ReadFile(expectedPath)
	if err != nil {
		return nil, tally{}, err
	}
	expected, err := parseExpected(string(data))
	if err != nil {
		return nil, tally{}, fmt.Errorf("%s: %w", expectedPath, err)
	}
	if data, err = os.ReadFile(reportPath); err != nil {
		return nil, tally{}, err
	}
	specs, err := parseReport(data)
	if err != nil {
		return nil, tally{}, fmt.Errorf("%s: %w", reportPath, err)
	}
	if data, err = os.ReadFile(infoPath); err != nil {
		return nil, tally{}, err
	}
	features, err := parseFeatures(data)
	if err != nil {
		return nil, tally{}, fmt.Errorf("%s: %w", infoPath, err)
	}
	var required []string
	for _, f := range strings.Split(require, ",") {
		if f = strings.TrimSpace(f); f != "" {
			if !knownFeatures[f] {
				return nil, tally{}, fmt.Errorf("-require: unknown feature %q", f)
			}
			required = append(required, f)
		}
	}
	problems, counts := check(expected, specs, features, required, exit, partial)
	return problems, counts, nil
}
