package daemon

import (
	"os"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
