package testutil

import (
	"os"
	"strconv"
	"time"
)

// Patience stretches how long a test waits for something that should
// happen (a state, a log line), never how long it expects something to
// take: $CRIB_TEST_PATIENCE (a factor, default 1) is set where the tests
// run emulated and many at once, as in the VM suite, where a container
// that starts in half a second on the host can take ten.
func Patience(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv("CRIB_TEST_PATIENCE"), 64)
	if err != nil || f < 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}
