package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/crib-dev/crib/internal/daemon"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/sigpolicy"
)

func verifyFlags(fs *flag.FlagSet) func(imageEnv, []string) error {
	ns := fs.String("namespace", "", "the pod namespace whose policy applies (namespaced_dir)")
	return func(env imageEnv, args []string) error {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		ref := args[0]
		var auth image.Auth
		if a, err := dockerAuth(ref); err != nil {
			return err
		} else if a != nil {
			auth = *a
		}
		cfg := daemon.VerifyConfig(env.cfg)
		if !cfg.SignaturePolicy.Enabled() {
			fmt.Fprintf(env.stdout, "allowed: %s: no signature policy is configured ([signature_policy])\n", ref)
			return nil
		}
		d, err := image.Verify(ctx, cfg, ref, auth, *ns)
		var refused *sigpolicy.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintf(env.stdout, "refused: %s by %s of %s (%s): %s\n", ref, d.ScopeString(), d.PolicyFile, strings.Join(d.Requirements, ", "), d.Reason)
			return errors.New("the signature policy refuses this image")
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "allowed: %s by %s of %s (%s)\n", ref, d.ScopeString(), d.PolicyFile, strings.Join(d.Requirements, ", "))
		return nil
	}
}
