package nri

import (
	"context"
	"errors"
	"fmt"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/runtime-tools/generate"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/resclass"
)

// adjust applies the plugins' combined adjustment to spec with NRI's own
// generator. CDI devices go through crib's registry, block I/O and RDT
// classes through its class configuration; RDT settings on a host without
// resctrl are refused here, with the reason, rather than by runc at start.
func (n *NRI) adjust(spec *specs.Spec, a *nri.ContainerAdjustment) error {
	if a == nil {
		return nil
	}
	g := generate.SpecGenerator(specGen{spec},
		generate.WithCDIDeviceInjector(n.injectCDI),
		generate.WithBlockIOResolver(n.opts.Classes.BlockIO),
		generate.WithRdtResolver(n.opts.Classes.RDT),
	)
	if err := g.Adjust(a); err != nil {
		return err
	}
	if a.GetLinux().GetRdt() != nil || a.GetLinux().GetResources().GetRdtClass() != nil {
		return resclass.CheckRDT(spec)
	}
	return nil
}

// injectCDI edits the CDI devices a plugin asked for into spec.
func (n *NRI) injectCDI(spec *specs.Spec, names []string) error {
	if n.opts.CDI == nil {
		return errors.New("CDI devices: no CDI spec directories are configured")
	}
	ds, err := n.opts.CDI.Resolve(names)
	if err != nil {
		return fmt.Errorf("CDI devices: %w", err)
	}
	return ds.Apply(spec)
}

// sync hands a plugin that registers every pod and container, and applies
// the updates it answers with.
func (n *NRI) sync(ctx context.Context, cb nri.SyncCB) error {
	<-n.ready
	var pods []*nri.PodSandbox
	for _, s := range n.sbs.List() {
		pods = append(pods, podOf(s))
	}
	var ctrs []*nri.Container
	for _, c := range n.ctrs.List() {
		_, ctr := n.describe(c)
		ctrs = append(ctrs, ctr)
	}
	updates, err := cb(ctx, pods, ctrs)
	if err != nil {
		return err
	}
	n.apply(ctx, updates)
	return nil
}

// updateUnasked applies the updates a plugin asks for on its own; it
// returns those that failed.
func (n *NRI) updateUnasked(ctx context.Context, updates []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) {
	<-n.ready
	return n.apply(ctx, updates), nil
}

// apply puts plugins' container updates in force through the containers'
// own update path, and returns those that failed; a failure of one not
// marked IgnoreFailure is logged.
func (n *NRI) apply(ctx context.Context, updates []*nri.ContainerUpdate) []*nri.ContainerUpdate {
	var failed []*nri.ContainerUpdate
	for _, u := range updates {
		err := n.update(ctx, u)
		if err == nil {
			continue
		}
		failed = append(failed, u)
		if !u.GetIgnoreFailure() {
			n.log.Warn("plugin's container update failed", "container", u.GetContainerId(), "err", err)
		}
	}
	return failed
}

func (n *NRI) update(ctx context.Context, u *nri.ContainerUpdate) error {
	c, err := n.ctrs.Get(u.GetContainerId())
	if err != nil {
		return err
	}
	res := mergeResources(c.Config.GetLinux().GetResources(), u.GetLinux().GetResources())
	return n.ctrs.UpdateResourcesFromPlugin(ctx, c.ID, res)
}

// evict stops the containers plugins evict, as containerd does.
func (n *NRI) evict(ctx context.Context, evictions []*nri.ContainerEviction) {
	for _, e := range evictions {
		n.log.Info("plugin evicts container", "container", e.GetContainerId(), "reason", e.GetReason())
		if err := n.ctrs.Stop(ctx, e.GetContainerId(), 0); err != nil {
			n.log.Warn("evict container", "container", e.GetContainerId(), "err", err)
		}
	}
}
