package grains

import (
	"context"
	"errors"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/protocol"
)

// Matches returns g as the edge's Matches.
func Matches(g *actors.Gateway) edge.Matches { return gatewayMatches{g} }

type gatewayMatches struct{ g *actors.Gateway }

func (m gatewayMatches) CreateMatch(ctx context.Context, spec edge.MatchSpec) (string, error) {
	id, err := m.g.Create(ctx, actors.MatchSpec{Names: spec.Names, Decks: spec.Decks, Bots: spec.Bots, Guests: spec.Guests, Seed: spec.Seed})
	return id, translateGatewayErr(err)
}

func (m gatewayMatches) MatchExists(ctx context.Context, matchID string) (bool, error) {
	ok, err := m.g.MatchExists(ctx, matchID)
	return ok, translateGatewayErr(err)
}

func (m gatewayMatches) NameSeat(ctx context.Context, matchID string, seat int, name string) error {
	return translateGatewayErr(m.g.NameSeat(ctx, matchID, seat, name))
}

func (m gatewayMatches) OpenSeat(ctx context.Context, req edge.OpenSeatRequest, sink edge.SeatSink) (edge.Seat, error) {
	s, err := m.g.OpenSeat(ctx, actors.SeatRequest{
		MatchID: req.MatchID, Seat: req.Seat, TicketID: req.TicketID,
		TicketExpires: req.TicketExpires, ResumeFromSeq: req.ResumeFromSeq,
	}, sinkAdapter{sink})
	if err != nil {
		return nil, translateGatewayErr(err)
	}
	return gatewaySeat{s}, nil
}

type gatewaySeat struct{ s *actors.Seat }

func (s gatewaySeat) Intent(ctx context.Context, intentID string, basedOnSeq int64, in protocol.Intent) error {
	return translateGatewayErr(s.s.Intent(ctx, intentID, basedOnSeq, in))
}

func (s gatewaySeat) Resync(ctx context.Context, fromSeq int64, full bool) error {
	return translateGatewayErr(s.s.Resync(ctx, fromSeq, full))
}

func (s gatewaySeat) LastSeq() int64   { return s.s.LastSeq() }
func (s gatewaySeat) Close(leave bool) { s.s.Close(leave) }

type sinkAdapter struct{ sink edge.SeatSink }

func (a sinkAdapter) Deliver(frames [][]byte) { a.sink.Deliver(frames) }

func (a sinkAdapter) Detach(r actors.DetachReason) {
	switch r {
	case actors.DetachReplaced:
		a.sink.Detach(edge.DetachReplaced)
	case actors.DetachShutdown:
		a.sink.Detach(edge.DetachShutdown)
	default:
		a.sink.Detach(edge.DetachUnavailable)
	}
}

// translateGatewayErr keeps the cause in the chain and adds the edge's sentinel.
func translateGatewayErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actors.ErrMatchNotFound):
		return errors.Join(edge.ErrMatchNotFound, err)
	case errors.Is(err, actors.ErrTicketUsed):
		return errors.Join(edge.ErrTicketUsed, err)
	case errors.Is(err, actors.ErrBadRequest):
		return errors.Join(edge.ErrBadRequest, err)
	case errors.Is(err, actors.ErrUnavailable), errors.Is(err, actors.ErrDetached):
		// A detached seat's connection is closing anyway; the client
		// reconnects and resumes.
		return errors.Join(edge.ErrUnavailable, err)
	}
	return err
}
