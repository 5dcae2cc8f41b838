package streaming

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
)

// hijacked is a ResponseWriter that remembers the connection its handler
// takes over, so that the connection ends with the handler. cri-streaming
// leaves the connection of a client that never opens the streams it asked
// for open once the stream creation timeout fires (createHTTPStreamStreams
// returns without closing it): the idle timeout, hours later, would be
// the first to close it.
type hijacked struct {
	http.ResponseWriter
	// conn is the taken connection, nil before Hijack. Hijack and close
	// are called by the handler's goroutine.
	conn net.Conn
}

// closeHijacked wraps w; call close once the handler has returned.
func closeHijacked(w http.ResponseWriter) *hijacked { return &hijacked{ResponseWriter: w} }

// Hijack takes over the connection as w's Hijack does, and remembers it.
func (h *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("hijack: %w", http.ErrNotSupported)
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("hijack: %w", err)
	}
	h.conn = c
	return c, rw, nil
}

// Unwrap is the ResponseWriter it wraps, for http.ResponseController.
func (h *hijacked) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// close closes the taken connection, if any; closing one the handler
// closed already does nothing.
func (h *hijacked) close() {
	if h.conn != nil {
		_ = h.conn.Close()
	}
}
