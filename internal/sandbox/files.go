package sandbox

import (
	"fmt"
	"os"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resolvConf is the pod's resolv.conf: the DNS config the kubelet sends, or
// the host's when it sends none.
func resolvConf(dns *runtimeapi.DNSConfig) ([]byte, error) {
	if len(dns.GetServers()) == 0 && len(dns.GetSearches()) == 0 && len(dns.GetOptions()) == 0 {
		data, err := os.ReadFile("/etc/resolv.conf")
		if os.IsNotExist(err) {
			return nil, nil
		}
		return data, err
	}
	var b strings.Builder
	if len(dns.GetSearches()) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(dns.GetSearches(), " "))
	}
	for _, s := range dns.GetServers() {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(dns.GetOptions()) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(dns.GetOptions(), " "))
	}
	return []byte(b.String()), nil
}

// hostsFile is the pod's /etc/hosts: the host's for a host-network pod,
// else loopback names and the pod's hostname.
func hostsFile(hostNetwork bool, hostname string) ([]byte, error) {
	if hostNetwork {
		data, err := os.ReadFile("/etc/hosts")
		if os.IsNotExist(err) {
			return nil, nil
		}
		return data, err
	}
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if hostname != "" {
		fmt.Fprintf(&b, "127.0.1.1\t%s\n", hostname)
	}
	return []byte(b.String()), nil
}

// writeFile writes data to path through a temporary file and a rename, so
// that a container never sees half a file.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
