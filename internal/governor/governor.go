package governor

import (
	"context"
	"time"
)

// everyUntil calls step now and at every tick of interval until ctx ends:
// the sampling loop of both governors.
func everyUntil(ctx context.Context, interval time.Duration, step func(now time.Time)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	step(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			step(now)
		}
	}
}
