package envelope

import "time"

// ShiftWarnWindow moves the start of the current warning window back by d
// (the first call with a large d opens a fresh window), so the rate-limit
// test does not depend on what other tests logged, nor wait 10 s.
func ShiftWarnWindow(d time.Duration) {
	warnMu.Lock()
	defer warnMu.Unlock()
	if !lastWarn.IsZero() {
		lastWarn = lastWarn.Add(-d)
	}
}

// WarnEvery is warnEvery, for tests.
const WarnEvery = warnEvery
