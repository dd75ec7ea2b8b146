package main

import (
	"context"
	"time"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/image"
)

// pullProgressTimeout bounds one question to the local API: the agent
// asks every second while a pod waits for its image.
const pullProgressTimeout = time.Second

// cribPullProgress tells the agent how far crib got with a pull, from the
// local API's list of pulls in flight; the CRI has no such call, so only
// crib's runtime can be asked.
type cribPullProgress struct{ client *api.Client }

// PullProgress is the oldest pull in flight of image's reference (pulls
// of one reference with different credentials are separate).
func (p cribPullProgress) PullProgress(ref string) (done, total int64, ok bool) {
	norm, err := image.Normalize(ref)
	if err != nil {
		return 0, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), pullProgressTimeout)
	defer cancel()
	pulls, err := p.client.ListPulls(ctx)
	if err != nil {
		return 0, 0, false
	}
	for _, pl := range pulls {
		if pl.Ref == norm {
			return pl.Done, pl.Total, true
		}
	}
	return 0, 0, false
}
