package edge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Drain is the edge's part of a graceful stop (docs/operations.md §2),
// bounded by bound from ctx: Shutdown with half of the bound (sessions are
// told to reconnect elsewhere, and clients need a moment to read the
// close), then the shutdown of hs, the HTTP server that serves Handler,
// with a quarter. The last quarter is the caller's, for the member to leave
// its cluster so peers take its matches over. It returns both steps'
// errors; the steps run whatever the first one returned.
func (s *Server) Drain(ctx context.Context, hs *http.Server, bound time.Duration) error {
	sctx, scancel := context.WithTimeout(ctx, bound/2)
	serr := s.Shutdown(sctx)
	scancel()
	hctx, hcancel := context.WithTimeout(ctx, bound/4)
	herr := hs.Shutdown(hctx)
	hcancel()
	if herr != nil {
		herr = fmt.Errorf("edge: http shutdown: %w", herr)
	}
	return errors.Join(serr, herr)
}
