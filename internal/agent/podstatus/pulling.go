package podstatus

import (
	"fmt"
	"strings"
)

// PullingMessage is the waiting message of a container whose image is
// being pulled: with the pull's percent when the runtime tells it
// (known), without otherwise.
func PullingMessage(image string, done, total int64, known bool) string {
	msg := fmt.Sprintf("Pulling image %q", image)
	if !known || total <= 0 {
		return msg
	}
	done = min(max(done, 0), total)
	return fmt.Sprintf("%s (%d%%: %.1f of %.1f MB)", msg, done*100/total, float64(done)/1e6, float64(total)/1e6)
}

// PullPercent returns the percent ("42%") a PullingMessage carries.
func PullPercent(msg string) (string, bool) {
	if !strings.HasPrefix(msg, "Pulling image ") || !strings.HasSuffix(msg, ")") {
		return "", false
	}
	i := strings.LastIndex(msg, " (")
	if i < 0 {
		return "", false
	}
	pct, _, ok := strings.Cut(msg[i+2:], ":")
	if !ok || !strings.HasSuffix(pct, "%") {
		return "", false
	}
	return pct, true
}
