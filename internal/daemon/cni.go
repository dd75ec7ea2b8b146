package daemon

import (
	"path/filepath"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/network"
)

// networkDefaults describes the CNI network crib writes into an empty
// conf dir under cfg.
func networkDefaults(cfg config.Config) network.Defaults {
	return network.Defaults{
		Name:        cfg.Network.Name,
		Bridge:      cfg.Network.Bridge,
		Subnet:      cfg.Network.Subnet,
		IPAMDataDir: filepath.Join(cfg.Root, "cni", "networks"),
	}
}

// DefaultCNIConfig is the CNI conflist a daemon on cfg writes into an
// empty conf dir (as network.DefaultConfName), for an installer to put in
// place ahead of it.
func DefaultCNIConfig(cfg config.Config) ([]byte, error) {
	return network.DefaultConfList(networkDefaults(cfg))
}
