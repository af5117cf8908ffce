package governor

import (
	"context"
	"time"
)

// everyUntil calls step now and at every tick of interval, and woken at
// every signal on wake (nil: none), until ctx ends: the loop of both
// governors, so that a governor's state has one goroutine.
func everyUntil(ctx context.Context, interval time.Duration, step func(now time.Time), wake <-chan struct{}, woken func(now time.Time)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	step(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			step(now)
		case <-wake:
			woken(time.Now())
		}
	}
}
