package podconfig

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

func TestSandboxConfig(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "http", ContainerPort: 81, HostPort: 8081, Protocol: corev1.ProtocolTCP}, // same name: dropped
			{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
			{ContainerPort: 9090}, // no host port: the runtime skips it
		}
		p.Spec.Containers[0].Resources = resources([]string{"100m", "64Mi"}, []string{"", "128Mi"})
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name:            "side",
			Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8443, HostPort: 443, Protocol: corev1.ProtocolSCTP}},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)},
		})
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 1}}}}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{3000},
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}},
		}
		p.Labels[labels.PodName] = "spoofed"
	})
	got, err := SandboxConfig(pod, 3, nil, Options{PodLogRoot: "/var/log/pods", CgroupParent: "/kubepods"})
	checkErr(t, err, nil)
	want := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "1234-abcd", Attempt: 3},
		Hostname: "web",
		Labels: map[string]string{
			"app": "web", labels.PodName: "web", labels.PodNamespace: "default", labels.PodUID: "1234-abcd",
			labels.ManagedBy: labels.ManagedByValue,
		},
		Annotations:  map[string]string{"note": "hi"},
		LogDirectory: "/var/log/pods/default_web_1234-abcd",
		PortMappings: []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 9090},
			{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 8443, HostPort: 443},
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/burstable/pod1234-abcd",
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions:   podNS(),
				RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
				RunAsGroup:         &runtimeapi.Int64Value{Value: 1000},
				SupplementalGroups: []int64{2000, 3000},
				Privileged:         true,
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
			Sysctls:   map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"},
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, MemoryLimitInBytes: 128 << 20},
			Overhead:  &runtimeapi.LinuxContainerResources{},
		},
	}
	if d := diffProto(want, got); d != "" {
		t.Errorf("sandbox config (-want +got):\n%s", d)
	}
	// The pod's maps are copied, not shared.
	got.Labels["x"], got.Annotations["x"] = "y", "y"
	if _, ok := pod.Labels["x"]; ok {
		t.Error("sandbox labels alias the pod's")
	}
	if _, ok := pod.Annotations["x"]; ok {
		t.Error("sandbox annotations alias the pod's")
	}
}

func TestSandboxHostNetwork(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Spec.Hostname = "ignored" })
	got, err := SandboxConfig(pod, 0, nil, Options{})
	checkErr(t, err, nil)
	if got.Hostname != "" {
		t.Errorf("host-network hostname = %q, want none (the node's)", got.Hostname)
	}
	if got.DnsConfig != nil {
		t.Errorf("host-network ClusterFirst DNS = %v, want nil (the host's)", got.DnsConfig)
	}
	if got.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("network namespace = %v, want NODE", got.Linux.SecurityContext.NamespaceOptions.Network)
	}
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
		class  error
	}{
		{"pod name", func(*corev1.Pod) {}, "web", nil},
		{"spec.hostname", func(p *corev1.Pod) { p.Spec.Hostname = "box" }, "box", nil},
		{"long name cut to 63 without a trailing dash", func(p *corev1.Pod) { p.Name = long }, strings.Repeat("a", 62), nil},
		{"subdomain alone changes nothing", func(p *corev1.Pod) { p.Spec.Subdomain = "sub" }, "web", nil},
		{"fqdn", func(p *corev1.Pod) { p.Spec.Subdomain = "sub"; p.Spec.SetHostnameAsFQDN = ptr(true) }, "web.sub.default.svc.cluster.local", nil},
		{"fqdn too long", func(p *corev1.Pod) {
			p.Spec.Hostname = strings.Repeat("h", 40)
			p.Spec.Subdomain = "sub"
			p.Spec.SetHostnameAsFQDN = ptr(true)
		}, "", errdefs.ErrInvalidArgument},
		{"invalid hostname", func(p *corev1.Pod) { p.Spec.Hostname = "Not_Valid" }, "", errdefs.ErrInvalidArgument},
		{"invalid subdomain", func(p *corev1.Pod) { p.Spec.Subdomain = "a.b" }, "", errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SandboxConfig(testPod(tt.mutate), 0, nil, Options{ClusterDomain: "cluster.local"})
			checkErr(t, err, tt.class)
			if err == nil && got.Hostname != tt.want {
				t.Errorf("hostname = %q, want %q", got.Hostname, tt.want)
			}
		})
	}
}

func TestSandboxDNS(t *testing.T) {
	host := &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"ndots:1", "edns0"}}
	podDNS := &corev1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1", "192.168.1.1"},
		Searches:    []string{"example.com"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "rotate"}},
	}
	tests := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		dnsConfig   *corev1.PodDNSConfig
		opts        Options
		want        *runtimeapi.DNSConfig
		class       error
	}{
		{name: "ClusterFirst standalone: the host's, left to the runtime", policy: corev1.DNSClusterFirst},
		{name: "unset policy is ClusterFirst"},
		{name: "Default without host config: left to the runtime", policy: corev1.DNSDefault},
		{name: "Default with host config", policy: corev1.DNSDefault, opts: Options{HostDNS: host},
			want: &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"ndots:1", "edns0"}}},
		{name: "ClusterFirst with a cluster DNS", policy: corev1.DNSClusterFirst,
			opts: Options{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", HostDNS: host},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"},
				Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"}, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst on the host network falls back to the host", policy: corev1.DNSClusterFirst, hostNetwork: true,
			opts: Options{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}},
		{name: "ClusterFirstWithHostNet uses the cluster DNS", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true,
			opts: Options{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"},
				Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}},
		{name: "None takes only the pod's", policy: corev1.DNSNone, dnsConfig: podDNS, opts: Options{HostDNS: host},
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1", "192.168.1.1"}, Searches: []string{"example.com"}, Options: []string{"ndots:2", "rotate"}}},
		{name: "None without dnsConfig is empty", policy: corev1.DNSNone, want: &runtimeapi.DNSConfig{}},
		{name: "Default merged with the pod's", policy: corev1.DNSDefault, dnsConfig: podDNS, opts: Options{HostDNS: host},
			want: &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "1.1.1.1"}, Searches: []string{"lan", "example.com"},
				Options: []string{"ndots:2", "edns0", "rotate"}}},
		{name: "ClusterFirst standalone with the pod's and no host config", policy: corev1.DNSClusterFirst, dnsConfig: podDNS,
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1", "192.168.1.1"}, Searches: []string{"example.com"}, Options: []string{"ndots:2", "rotate"}}},
		{name: "at most three nameservers", policy: corev1.DNSNone,
			dnsConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}},
			want:      &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}}},
		{name: "invalid policy", policy: "Sometimes", class: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.DNSPolicy = tt.policy
				p.Spec.HostNetwork = tt.hostNetwork
				p.Spec.DNSConfig = tt.dnsConfig
			})
			got, err := SandboxConfig(pod, 0, nil, tt.opts)
			checkErr(t, err, tt.class, string(tt.policy))
			if err != nil {
				return
			}
			if d := diffProto(tt.want, got.DnsConfig); d != "" {
				t.Errorf("dns (-want +got):\n%s", d)
			}
		})
	}
	// The host's config is copied, never modified.
	if d := diffProto(&runtimeapi.DNSConfig{Servers: []string{"192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"ndots:1", "edns0"}}, host); d != "" {
		t.Errorf("Options.HostDNS was modified (-want +got):\n%s", d)
	}
}

func TestFitSearches(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, strings.Repeat(string(rune('a'+i%26)), 10))
	}
	if got := fitSearches(many); len(got) != 32 {
		t.Errorf("%d search paths kept, want 32", len(got))
	}
	tooLong := strings.Repeat("x", 254)
	if got := fitSearches([]string{"a", tooLong, "b"}); strings.Join(got, " ") != "a b" {
		t.Errorf("fitSearches dropped the wrong paths: %q", got)
	}
	var wide []string
	for range 10 {
		wide = append(wide, strings.Repeat("w", 250))
	}
	got := fitSearches(wide)
	if n := len(strings.Join(got, " ")); n > 2048 || len(got) != 8 {
		t.Errorf("search line of %d paths, %d characters; want 8 paths within 2048", len(got), n)
	}
}

func TestParseResolvConf(t *testing.T) {
	data := []byte(`# generated
nameserver 192.168.1.1
search old.example
nameserver 8.8.8.8
search corp.example. lan
options ndots:2
options timeout:1 attempts:3
nameserver
`)
	want := &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "8.8.8.8"}, Searches: []string{"corp.example", "lan"}, Options: []string{"timeout:1", "attempts:3"}}
	if d := diffProto(want, ParseResolvConf(data)); d != "" {
		t.Errorf("ParseResolvConf (-want +got):\n%s", d)
	}
}

func TestRuntimeHandler(t *testing.T) {
	opts := Options{RuntimeHandlers: map[string]string{"gvisor": "runsc", "default": ""}}
	tests := []struct {
		class *string
		want  string
		err   error
	}{
		{nil, "", nil},
		{ptr(""), "", nil},
		{ptr("gvisor"), "runsc", nil},
		{ptr("default"), "", nil},
		{ptr("kata"), "", errdefs.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := RuntimeHandler(testPod(func(p *corev1.Pod) { p.Spec.RuntimeClassName = tt.class }), opts)
		checkErr(t, err, tt.err, "kata")
		if got != tt.want {
			t.Errorf("RuntimeHandler(%v) = %q, want %q", tt.class, got, tt.want)
		}
	}
}

func TestSandboxIdentityErrors(t *testing.T) {
	for _, m := range []func(*corev1.Pod){
		func(p *corev1.Pod) { p.Name = "" },
		func(p *corev1.Pod) { p.Namespace = "" },
		func(p *corev1.Pod) { p.UID = "" },
	} {
		_, err := SandboxConfig(testPod(m), 0, nil, Options{})
		checkErr(t, err, errdefs.ErrInvalidArgument, "is empty")
	}
	_, err := SandboxConfig(nil, 0, nil, Options{})
	checkErr(t, err, errdefs.ErrInvalidArgument)
}
