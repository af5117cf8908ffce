package sim

import (
	"errors"
	"testing"

	"github.com/matchgrain/matchgrain/actors/internal/mutate"
)

// TestMutations plants each known bug in turn and shows that a simulation
// run catches it: a simulator that finds nothing is only worth something
// if it would have found these.
func TestMutations(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  mutate.Bug
	}{
		{"AckBeforeAppend", mutate.AckBeforeAppend},
		{"ApplyDuplicate", mutate.ApplyDuplicate},
		{"SkipFence", mutate.SkipFence},
		{"DropReactivationTimer", mutate.DropReactivationTimer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutate.Planted = tc.bug
			defer func() { mutate.Planted = mutate.None }()
			st, err := Run(*firstFlag, matches(t))
			var se *SeedError
			if !errors.As(err, &se) {
				t.Fatalf("%d matches ran with %s planted and no invariant broke", st.Matches, tc.name)
			}
			t.Logf("caught at seed %d: %v", se.Seed, se.Err)
		})
	}
}
