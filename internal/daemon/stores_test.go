package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/snapshot"
)

// TestLayerLimitsFromConfig checks that each layer limit key reaches the
// image store's snapshot limits, each to its own field.
func TestLayerLimitsFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.MaxLayerSize = 1
	cfg.LayerLimits = config.LayerLimits{ExpansionRatio: 2, ExpansionFloor: 3, FreeSpaceReserve: 4, MaxEntries: 5}
	want := snapshot.Limits{MaxSize: 1, ExpansionRatio: 2, ExpansionFloor: 3, FreeSpaceReserve: 4, MaxEntries: 5}
	if diff := cmp.Diff(want, LayerLimits(cfg)); diff != "" {
		t.Errorf("LayerLimits (-want +got):\n%s", diff)
	}
}
