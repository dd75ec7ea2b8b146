package podconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Resolver limits the kubelet enforces on the config it produces.
const (
	maxNameservers    = 3
	maxSearchPaths    = 32
	maxSearchChars    = 2048
	maxSearchPathSize = 253
)

// dnsConfig is the kubelet's GetPodDNS, standalone:
//
//   - None: only the pod's dnsConfig.
//   - ClusterFirst (not on the host network) and ClusterFirstWithHostNet:
//     Options.ClusterDNS with the cluster search paths and ndots:5 when a
//     cluster DNS is configured; without one (the standalone case) the
//     kubelet falls back to Default, and so does this.
//   - Default, and ClusterFirst on the host network: the host's resolver.
//
// The pod's dnsConfig is then merged in. When the result would be the
// host's resolver unchanged it is nil: the runtime then copies the host's
// resolv.conf itself, which is the same thing without reading it here.
// Without Options.HostDNS, a pod's dnsConfig under Default replaces the
// host's settings instead of extending them.
func dnsConfig(pod *corev1.Pod, opts Options) (*runtimeapi.DNSConfig, error) {
	var base *runtimeapi.DNSConfig
	switch policy := pod.Spec.DNSPolicy; policy {
	case corev1.DNSNone:
		base = &runtimeapi.DNSConfig{}
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, "":
		if (policy != corev1.DNSClusterFirstWithHostNet && pod.Spec.HostNetwork) || len(opts.ClusterDNS) == 0 {
			base = hostDNS(opts)
			break
		}
		var hostSearch []string
		if opts.HostDNS != nil {
			hostSearch = opts.HostDNS.Searches
		}
		base = &runtimeapi.DNSConfig{
			Servers:  slices.Clone(opts.ClusterDNS),
			Searches: clusterSearches(pod.Namespace, opts.ClusterDomain, hostSearch),
			Options:  []string{"ndots:5"},
		}
	case corev1.DNSDefault:
		base = hostDNS(opts)
	default:
		return nil, fmt.Errorf("dnsPolicy %q is not valid: %w", policy, errdefs.ErrInvalidArgument)
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		if base == nil {
			base = &runtimeapi.DNSConfig{}
		}
		base.Servers = unique(append(base.Servers, pc.Nameservers...))
		base.Searches = unique(append(base.Searches, pc.Searches...))
		base.Options = mergeOptions(base.Options, pc.Options)
	}
	if base == nil {
		return nil, nil
	}
	base.Servers = base.Servers[:min(len(base.Servers), maxNameservers)]
	base.Searches = fitSearches(base.Searches)
	return base, nil
}

// hostDNS is a copy of the host's resolver settings, nil when unknown.
func hostDNS(opts Options) *runtimeapi.DNSConfig {
	h := opts.HostDNS
	if h == nil {
		return nil
	}
	return &runtimeapi.DNSConfig{
		Servers:  slices.Clone(h.Servers),
		Searches: slices.Clone(h.Searches),
		Options:  slices.Clone(h.Options),
	}
}

func clusterSearches(namespace, domain string, hostSearch []string) []string {
	if domain == "" {
		return slices.Clone(hostSearch)
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return unique(append(s, hostSearch...))
}

// unique drops repeated entries, keeping the first.
func unique(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions overrides or appends the pod's resolver options; an option
// keeps its position, so the result is stable (the kubelet's is in map
// order).
func mergeOptions(existing []string, pod []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, o := range existing {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if values[n] == "" {
			out = append(out, n)
		} else {
			out = append(out, n+":"+values[n])
		}
	}
	return out
}

// fitSearches applies the kubelet's search-line limits: at most 32 paths,
// none longer than 253 characters, 2048 characters in all (dropping from
// the end).
func fitSearches(in []string) []string {
	var out []string
	for _, s := range in {
		if len(s) <= maxSearchPathSize && len(out) < maxSearchPaths {
			out = append(out, s)
		}
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > maxSearchChars {
		out = out[:len(out)-1]
	}
	return out
}

// ParseResolvConf reads a resolv.conf as the kubelet does: nameserver lines
// accumulate, the last search line and the last options line win, trailing
// dots are dropped from search domains, '#' starts a comment line.
func ParseResolvConf(data []byte) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				cfg.Servers = append(cfg.Servers, f[1])
			}
		case "search":
			cfg.Searches = nil
			for _, s := range f[1:] {
				cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			cfg.Options = slices.Clone(f[1:])
		}
	}
	return cfg
}
