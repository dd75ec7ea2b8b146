package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crib-dev/crib/internal/api"
)

// pullsFlags: `crib image pulls [--layers]`.
func pullsFlags(fs *flag.FlagSet) func(imageEnv, []string) error {
	layers := fs.Bool("layers", false, "show each layer of every pull")
	return func(env imageEnv, _ []string) error {
		pulls, err := env.client.ListPulls(context.Background())
		if err != nil {
			return err
		}
		return writePulls(env.stdout, pulls, *layers, time.Now())
	}
}

// writePulls prints the pulls in flight as a table; with layers, each
// pull's layers follow it, indented.
func writePulls(w io.Writer, pulls []api.PullInfo, layers bool, now time.Time) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tPROGRESS\tBYTES\tLAYERS\tWAITERS\tAGE")
	for _, p := range pulls {
		complete := 0
		for _, l := range p.Layers {
			if l.Total > 0 && l.Done >= l.Total {
				complete++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\n", p.Ref, percent(p.Done, p.Total), byteRatio(p.Done, p.Total),
			complete, len(p.Layers), p.Waiters, now.Sub(p.Started).Round(time.Second))
		if !layers {
			continue
		}
		for _, l := range p.Layers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\t\t\n", shortDigest(l.Digest), percent(l.Done, l.Total), byteRatio(l.Done, l.Total))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A layer's row leaves the last columns empty: no trailing blanks.
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}

// percent is done of total as a whole percentage, "-" while total is not
// known (the manifest is not read yet).
func percent(done, total int64) string {
	if total <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", done*100/total)
}

func byteRatio(done, total int64) string {
	if total <= 0 {
		return "-"
	}
	return humanSize(done) + "/" + humanSize(total)
}
