package chronolog

import (
	"context"
	"math"
	"sync"
)

// windowMs is how long one window of the fastest-transit minimum lasts: the estimate follows
// clock drift and path changes within two windows.
const windowMs = 5_000

// streamClock maps the owner's stream clock (Invocation.written_at_ms: ms since the stream
// opened, monotonic) onto this process's, so that a held invocation's hold counts from when the
// owner wrote it rather than from its receipt. It keeps the least offset (receipt −
// written_at_ms) seen in the last one to two windows: the stream's fastest transit plus the
// clocks' origin difference. One per stream (the owner's clock restarts with each stream).
type streamClock struct {
	best, previous, windowEnds float64
}

func newStreamClock() *streamClock {
	return &streamClock{best: math.Inf(1), previous: math.Inf(1), windowEnds: math.Inf(-1)}
}

// writtenAt is the local time (ms) at which a message written at writtenAtMs would have arrived
// with the fastest transit seen: never after receivedAtMs; receivedAtMs itself when writtenAtMs
// is 0 (an owner that does not set it).
func (c *streamClock) writtenAt(writtenAtMs, receivedAtMs float64) float64 {
	if writtenAtMs <= 0 {
		return receivedAtMs
	}
	if receivedAtMs >= c.windowEnds {
		if receivedAtMs < c.windowEnds+windowMs {
			c.previous = c.best
		} else {
			c.previous = math.Inf(1) // after a quiet spell, older transits no longer count
		}
		c.best = math.Inf(1)
		c.windowEnds = receivedAtMs + windowMs
	}
	c.best = math.Min(c.best, receivedAtMs-writtenAtMs)
	return writtenAtMs + math.Min(c.best, c.previous)
}

// inflight counts the work an executor holds (held, running, and not yet answered), so that a
// stop can wait for it. Work may come while a stop waits: it is waited for too.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
}

// wait returns when no work is held (at once when none is), or when ctx ends.
func (f *inflight) wait(ctx context.Context) {
	for {
		f.mu.Lock()
		n, idle := f.n, f.idle
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return
		}
	}
}
