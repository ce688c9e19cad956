package chronolog

import (
	"context"
	"testing"
	"time"
)

func TestStreamClockKeepsTheFastestTransit(t *testing.T) {
	c := newStreamClock()
	if got := c.writtenAt(0, 500); got != 500 {
		t.Fatalf("no written_at_ms: counted from receipt, got %v", got)
	}
	// Written at 100 on the owner's clock, received at 1,100 here: an offset of 1,000.
	if got := c.writtenAt(100, 1_100); got != 1_100 {
		t.Fatalf("the first message sets the offset, got %v", got)
	}
	// A message that waited 40 ms in a queue is mapped to when it would have come at the fastest transit.
	if got := c.writtenAt(200, 1_240); got != 1_200 {
		t.Fatalf("a queued message counts from when it was written, got %v", got)
	}
	// A faster transit lowers the offset.
	if got := c.writtenAt(300, 1_290); got != 1_290 {
		t.Fatalf("a faster transit is the new offset, got %v", got)
	}
	// After a quiet spell of more than two windows, older transits no longer count.
	if got := c.writtenAt(20_000, 21_050); got != 21_050 {
		t.Fatalf("after a quiet spell the offset starts afresh, got %v", got)
	}
}

func TestInflightWaitsForWorkThatComesMeanwhile(t *testing.T) {
	var f inflight
	f.wait(context.Background()) // none held: at once
	f.add()
	waited := make(chan struct{})
	go func() {
		f.wait(context.Background())
		close(waited)
	}()
	f.add() // comes while the wait runs
	f.done()
	select {
	case <-waited:
		t.Fatal("the wait ended with work still held")
	case <-time.After(20 * time.Millisecond):
	}
	f.done()
	<-waited
	ctx, cancel := context.WithCancel(context.Background())
	f.add()
	cancel()
	f.wait(ctx) // ends with its context
}
