package network

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// DefaultConfName is the file crib writes into an empty conf dir. crib
// rewrites it (for a new pod CIDR) only while it is the one it wrote.
const DefaultConfName = "10-crib.conflist"

// Defaults describe the network crib writes when the conf dir is empty.
type Defaults struct {
	// Name is the CNI network name.
	Name string
	// Bridge is the host bridge's name.
	Bridge string
	// Subnet is the pod CIDR (host-local IPAM range).
	Subnet string
	// IPAMDataDir is where host-local keeps its reservations.
	IPAMDataDir string
}

// DefaultConfList is the conflist of d (what crib writes into an empty
// conf dir, and `crib config cni` prints): a bridge that is the pods'
// gateway, masquerading their traffic, with host-local addresses, port
// mappings and bandwidth limits.
func DefaultConfList(d Defaults) ([]byte, error) {
	if _, _, err := net.ParseCIDR(d.Subnet); err != nil {
		return nil, fmt.Errorf("default network subnet %q: %w", d.Subnet, err)
	}
	list := map[string]any{
		"cniVersion": "1.0.0",
		"name":       d.Name,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      d.Bridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": d.IPAMDataDir,
					"ranges":  []any{[]any{map[string]any{"subnet": d.Subnet}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
			map[string]any{"type": "bandwidth", "capabilities": map[string]bool{"bandwidth": true}},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}

// writeDefault writes the default conflist into dir, atomically.
func writeDefault(dir string, d Defaults) error {
	data, err := DefaultConfList(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create CNI conf dir: %w", err)
	}
	tmp := filepath.Join(dir, "."+DefaultConfName+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write default CNI config: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, DefaultConfName)); err != nil {
		return fmt.Errorf("write default CNI config: %w", err)
	}
	return nil
}
