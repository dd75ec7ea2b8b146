package sandbox

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/network"
)

// The pod annotations that ask for bandwidth limits, as the kubelet names
// them.
const (
	ingressBandwidthAnnotation = "kubernetes.io/ingress-bandwidth"
	egressBandwidthAnnotation  = "kubernetes.io/egress-bandwidth"
)

// networkPod is the CNI view of a sandbox.
func networkPod(s *Sandbox) (network.Pod, error) {
	md := s.Config.GetMetadata()
	p := network.Pod{
		ID: s.ID, NetNS: s.NetNS,
		Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(),
	}
	for _, pm := range s.Config.GetPortMappings() {
		if pm.GetHostPort() <= 0 {
			continue
		}
		p.PortMappings = append(p.PortMappings, network.PortMapping{
			HostPort:      pm.GetHostPort(),
			ContainerPort: pm.GetContainerPort(),
			Protocol:      strings.ToLower(pm.GetProtocol().String()),
			HostIP:        pm.GetHostIp(),
		})
	}
	bw, err := bandwidth(s.Config.GetAnnotations())
	if err != nil {
		return p, err
	}
	p.Bandwidth = bw
	return p, nil
}

// bandwidth reads the bandwidth annotations; bursts are unbounded, as the
// annotations give none.
func bandwidth(annotations map[string]string) (*network.Bandwidth, error) {
	var bw network.Bandwidth
	for key, rate := range map[string]*uint64{ingressBandwidthAnnotation: &bw.IngressRate, egressBandwidthAnnotation: &bw.EgressRate} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		bits, err := parseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("config.annotations[%q]: %w", key, err)
		}
		*rate = bits
	}
	if bw.IngressRate == 0 && bw.EgressRate == 0 {
		return nil, nil
	}
	if bw.IngressRate > 0 {
		bw.IngressBurst = math.MaxUint32
	}
	if bw.EgressRate > 0 {
		bw.EgressBurst = math.MaxUint32
	}
	return &bw, nil
}

// parseQuantity reads a Kubernetes quantity such as "10M" or "1Gi" as an
// integer.
func parseQuantity(v string) (uint64, error) {
	suffixes := []struct {
		s string
		m uint64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	}
	mult := uint64(1)
	num := v
	for _, sf := range suffixes {
		if strings.HasSuffix(v, sf.s) {
			num, mult = strings.TrimSuffix(v, sf.s), sf.m
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a positive quantity: %w", v, errdefs.ErrInvalidArgument)
	}
	return n * mult, nil
}

// attach connects the pod to the CNI network and records its IPs.
func (m *Manager) attach(ctx context.Context, s *Sandbox) error {
	p, err := networkPod(s)
	if err != nil {
		return err
	}
	ips, err := m.network.Setup(ctx, p)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		s.IPs = append(s.IPs, ip.String())
	}
	s.NetworkAttached = true
	return nil
}

// detach disconnects the pod from the CNI network. force tears down even
// when the record says the pod is not attached (a creation that died
// half-way may have attached it); CNI DEL is idempotent.
func (m *Manager) detach(ctx context.Context, s *Sandbox, force bool) error {
	if s.NetNS == "" || (!s.NetworkAttached && !force) {
		return nil
	}
	p, err := networkPod(s)
	if err != nil {
		// Bad annotations cannot have been attached with; detach without.
		p = network.Pod{ID: s.ID, NetNS: s.NetNS, Name: s.Config.GetMetadata().GetName(),
			Namespace: s.Config.GetMetadata().GetNamespace(), UID: s.Config.GetMetadata().GetUid()}
	}
	// A creation that died before it pinned the namespace leaves a plain
	// file or nothing there: the plugins can only release addresses then,
	// which CNI asks of them when given no namespace.
	if pinned, err := netns.IsPinned(p.NetNS); err != nil || !pinned {
		p.NetNS = ""
	}
	if err := m.network.Teardown(ctx, p); err != nil {
		return err
	}
	s.NetworkAttached = false
	s.IPs = nil
	return nil
}
