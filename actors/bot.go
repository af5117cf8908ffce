package actors

import (
	"fmt"

	"github.com/matchgrain/matchgrain/game/botpolicy"
	"github.com/matchgrain/matchgrain/protocol"
)

// A bot seat (a training match) is played by the match grain itself. The
// seat kind is part of the match's creation metadata, so whichever member
// activates the grain, after a failover too, knows which seats it plays.
//
// When a bot seat decides, the grain arms its timer for Timing.BotThink after
// the decision started and then submits one intent through handleIntent, the
// path a player's intent takes: same legality checks, durable append before
// anything is sent, one writer. The choice is a pure function of the match
// seed, the seat and the command-log position, so an activation that takes
// over a match mid-decision makes the same choice the old one would have
// (game/botpolicy).

// legalLister is the part of game.Engine the bot needs; an engine without it
// falls back on the legal intents of its view.
type legalLister interface {
	LegalCommands(player int) []protocol.Intent
}

// isBot reports whether seat is played by the grain.
func (g *Core) isBot(seat int) bool {
	return seat >= 0 && seat < 2 && g.meta.Bots[seat]
}

// botDue returns when the bot that decides now should act, or 0 when no bot
// decides (or the bot already failed at this log position).
func (g *Core) botDue() int64 {
	if g.engine == nil || g.engine.IsFinished() || !g.isBot(g.engine.Decider()) || g.botStuckAt == g.logSeq+1 {
		return 0
	}
	return g.clock.Start + g.deps.Timing.botThink().Milliseconds()
}

// botAct submits the deciding bot's intent if its think time is over.
func (g *Core) botAct(now int64) {
	at := g.botDue()
	if at == 0 || at > now {
		return
	}
	seat := g.engine.Decider()
	in := g.botChoice(seat)
	if in == nil {
		g.log.Error("bot has no legal intent", "seat", seat, "log_seq", g.logSeq)
		g.botStuckAt = g.logSeq + 1
		return
	}
	id := fmt.Sprintf("bot-%d", g.logSeq+1)
	before := g.logSeq
	code, msg := g.handleIntent(nil, &SubmitIntent{Seat: seat, Intent: &protocol.ClientIntent{IntentID: id, BasedOnSeq: g.engine.LastSeq(), Intent: in}})
	if g.state != stateRunning {
		return
	}
	if code != ReplyOK || g.logSeq == before {
		// A legal command the engine refuses is a rules bug: the bot stops
		// trying at this position and its decision clock bounds the match.
		g.log.Error("bot intent not accepted", "seat", seat, "intent", in.IntentKind().String(), "code", int(code), "msg", msg)
		g.botStuckAt = g.logSeq + 1
	}
}

// botChoice picks the bot's intent with the one bot policy (game/botpolicy),
// among the legal commands, from the generator of the seat and the next
// log position.
func (g *Core) botChoice(seat int) protocol.Intent {
	var legal []protocol.Intent
	if l, ok := g.engine.(legalLister); ok {
		legal = l.LegalCommands(seat)
	} else {
		legal = g.engine.View(seat).LegalIntents
	}
	return botpolicy.Choose(legal, botpolicy.Source(g.meta.Seed, g.logSeq+1, seat))
}
