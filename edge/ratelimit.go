package edge

import "time"

// bucket is a token bucket: rate tokens per second up to burst. It is owned
// by one goroutine (the connection's reader) and is not locked.
type bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, burst float64, now time.Time) bucket {
	return bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// take spends one token if there is one.
func (b *bucket) take(now time.Time) bool {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens += dt * b.rate
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// limiter holds a connection's two buckets: intents at the protocol rate
// (over it → ServerIntentResult RateLimited), and every frame at AbuseFactor
// times that rate with a depth of AbuseWindow (empty → fatal 4413). The
// second bucket empties only when the client sends more than
// AbuseFactor × rate frames per second, sustained long enough to exceed the
// window's allowance, which is the protocol's "more than 4× over 2 s".
type limiter struct {
	intents bucket
	abuse   bucket
}

func newLimiter(cfg *Config, now time.Time) limiter {
	abuseRate := cfg.IntentsPerSecond * cfg.AbuseFactor
	abuseDepth := max(abuseRate*cfg.AbuseWindow.Seconds(), 1)
	return limiter{
		intents: newBucket(cfg.IntentsPerSecond, float64(cfg.IntentBurst), now),
		abuse:   newBucket(abuseRate, abuseDepth, now),
	}
}
