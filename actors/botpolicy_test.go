package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/matchgrain/matchgrain/game/botpolicy"
	"github.com/matchgrain/matchgrain/protocol"
)

// botPolicyDigests pins the bot policy's choices to the rules revision: a
// grain that takes over a match in the middle of a bot's decision must make
// the choice the old activation would have, so a policy change is a rules
// change. Changing game/botpolicy fails this test until RulesRevision is
// bumped and the new digest added for it.
var botPolicyDigests = map[int]string{
	1: "ecd328a6b9944ece",
}

// TestBotPolicyPinnedToRulesRevision replays the policy over fixed choices
// and compares their digest with the one of the current revision.
func TestBotPolicyPinnedToRulesRevision(t *testing.T) {
	legal := []protocol.Intent{
		protocol.Concede{}, protocol.Mulligan{}, protocol.FinishMulligan{}, protocol.Ride{}, protocol.SkipRide{},
		protocol.Call{}, protocol.Move{}, protocol.ActivateAbility{}, protocol.EnterBattle{}, protocol.Attack{},
		protocol.Attack{BoosterSlot: protocol.IntPtr(1)}, protocol.Guard{}, protocol.Intercept{}, protocol.PassGuard{},
		protocol.ResolveAbility{Accept: true}, protocol.ResolveAbility{}, protocol.EndTurn{},
	}
	h := sha256.New()
	for pos := int64(1); pos <= 200; pos++ {
		for seat := range 2 {
			// Every prefix of the list, so each weight counts.
			l := legal[:1+int(pos)%len(legal)]
			in := botpolicy.Choose(l, botpolicy.Source(42, pos, seat))
			fmt.Fprintf(h, "%d/%d:%d\n", pos, seat, slices.IndexFunc(l, func(x protocol.Intent) bool { return reflect.DeepEqual(x, in) }))
		}
	}
	got := hex.EncodeToString(h.Sum(nil))[:16]
	want, ok := botPolicyDigests[RulesRevision]
	if !ok || got != want {
		t.Fatalf("bot policy digest %s, pinned for rules revision %d: %q; a policy change needs a new RulesRevision (and its digest here)",
			got, RulesRevision, want)
	}
}
