package chronolog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// session is one Subscribe stream, from hello to its end: its outgoing queue, the work running
// on it (to cancel) and held on it (to start at its moment), and its clock.
type session struct {
	ex     *Executor
	ctx    context.Context
	cancel context.CancelCauseFunc
	out    *outgoing
	clock  *streamClock
	opened time.Time
	// lastHeard is when the owner last sent anything, in ns since opened.
	lastHeard atomic.Int64
	mu        sync.Mutex
	running   map[string]context.CancelCauseFunc
	held      map[string]*time.Timer
	over      chan struct{}
	// stoppingAnswered is closed when the owner answered the executor's Stopping: no more work is on its way.
	stoppingAnswered chan struct{}
	answerOnce       sync.Once
}

// errStreamEnded is what the work of a stream that ended is cancelled with.
var errStreamEnded = errors.New("the stream to the owner ended")

// cancelledBy is what work the owner cancelled (CancelDelivery, CancelInvocation) is cancelled with.
func cancelledBy(reason string) error { return fmt.Errorf("cancelled by the owner: %s", reason) }

// session runs one stream until it ends: nil when it ended cleanly or the executor stopped, else
// the error that ended it. onWelcome runs at the owner's welcome.
func (e *Executor) session(onWelcome func()) error {
	ctx, cancel := context.WithCancelCause(e.base)
	s := &session{ex: e, ctx: ctx, cancel: cancel, out: newOutgoing(), clock: newStreamClock(), opened: time.Now(),
		running: map[string]context.CancelCauseFunc{}, held: map[string]*time.Timer{}, over: make(chan struct{}), stoppingAnswered: make(chan struct{})}
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		cancel(nil)
		return nil
	}
	e.current = s
	e.mu.Unlock()
	defer func() {
		cancel(errStreamEnded)
		s.dropHeld()
		e.mu.Lock()
		e.current = nil
		e.mu.Unlock()
		close(s.over)
	}()
	stream, err := e.subscribe.Subscribe(ctx)
	if err != nil {
		return err
	}
	s.out.push(e.hello())
	go func() {
		if err := s.out.run(ctx, stream); err != nil {
			cancel(err) // Recv then says why the stream ended
		}
	}()
	for {
		res, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
					return cause // a silent owner
				}
				return nil // the executor stopped
			}
			return err
		}
		s.lastHeard.Store(int64(time.Since(s.opened)))
		s.handle(res, onWelcome)
	}
}

// handle acts on one message of the owner.
func (s *session) handle(res *chronologv1.SubscribeResponse, onWelcome func()) {
	switch m := res.Message.(type) {
	case *chronologv1.SubscribeResponse_Welcome:
		onWelcome()
		s.out.welcome(m.Welcome)
		s.ex.checkOwnerVersion(m.Welcome.GetOwnerVersion())
		s.ex.welcomed.Do(func() { close(s.ex.ready) })
		go s.heartbeats(max(time.Duration(m.Welcome.GetHeartbeatIntervalMs())*time.Millisecond, 10*time.Millisecond))
	case *chronologv1.SubscribeResponse_Delivery:
		s.deliver(m.Delivery)
	case *chronologv1.SubscribeResponse_Deliveries:
		for _, d := range m.Deliveries.GetDeliveries() {
			s.deliver(d)
		}
	case *chronologv1.SubscribeResponse_Invocation:
		s.take(m.Invocation)
	case *chronologv1.SubscribeResponse_Invocations:
		for _, inv := range m.Invocations.GetInvocations() {
			s.take(inv)
		}
	case *chronologv1.SubscribeResponse_CancelDelivery:
		s.cancelRun(m.CancelDelivery.GetDeliveryId(), m.CancelDelivery.GetReason())
	case *chronologv1.SubscribeResponse_CancelInvocation:
		id, reason := m.CancelInvocation.GetInvocationId(), m.CancelInvocation.GetReason()
		if s.takeHeld(id) {
			// It never started: answered as a failed run, and its credit is free again.
			s.out.result(&chronologv1.ActionResult{InvocationId: id, Outcome: chronologv1.Outcome_OUTCOME_ERROR, Error: cancelledBy(reason).Error()})
			s.ex.work.done()
		} else {
			s.cancelRun(id, reason)
		}
	case *chronologv1.SubscribeResponse_Stopping:
		s.answerOnce.Do(func() { close(s.stoppingAnswered) })
	case *chronologv1.SubscribeResponse_Notice:
		if m.Notice.GetReason() == "UNSUPPORTED" && strings.HasPrefix(m.Notice.GetMessage(), "message stopping ") {
			s.answerOnce.Do(func() { close(s.stoppingAnswered) }) // an owner older than Stopping sends until the stream closes
			return
		}
		s.ex.report(fmt.Errorf("owner notice %s: %s", m.Notice.GetReason(), m.Notice.GetMessage()))
	}
}

// heartbeats sends a heartbeat every interval, and ends the stream when the owner was silent for 3.
func (s *session) heartbeats(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if time.Since(s.opened)-time.Duration(s.lastHeard.Load()) > 3*interval {
				s.cancel(fmt.Errorf("owner silent for %s (3 heartbeat intervals): reconnecting", 3*interval))
				return
			}
			s.out.push(&chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Heartbeat{Heartbeat: &chronologv1.Heartbeat{At: timestamppb.Now()}}})
		}
	}
}

// nowMs is the session's local clock: ms since it opened, monotonic.
func (s *session) nowMs() float64 { return float64(time.Since(s.opened)) / float64(time.Millisecond) }

// take runs invocation inv now, or, held (hold_ms), at its moment: hold_ms after the owner wrote
// it, mapped onto this clock by the stream's fastest transit (see streamClock).
func (s *session) take(inv *chronologv1.Invocation) {
	s.ex.work.add()
	if inv.GetHoldMs() == 0 {
		s.invoke(inv, 0)
		return
	}
	now := s.nowMs()
	at := s.clock.writtenAt(inv.GetWrittenAtMs(), now) + float64(inv.GetHoldMs())
	if at <= now {
		s.invoke(inv, uint32(now-at))
		return
	}
	id := inv.GetInvocationId()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[id] = time.AfterFunc(time.Duration((at-now)*float64(time.Millisecond)), func() {
		if s.takeHeld(id) {
			s.invoke(inv, uint32(math.Max(0, s.nowMs()-at)))
		}
	})
}

// takeHeld takes held invocation id out of the holds (false when it is not held): whoever takes it
// starts it, answers it or drops it.
func (s *session) takeHeld(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.held[id]
	if ok {
		t.Stop()
		delete(s.held, id)
	}
	return ok
}

// dropHeld drops every held invocation (its stream ended): the owner runs them again.
func (s *session) dropHeld() {
	s.mu.Lock()
	held := s.held
	s.held = map[string]*time.Timer{}
	s.mu.Unlock()
	for _, t := range held {
		t.Stop()
		s.ex.work.done()
	}
}

// start runs fn on a goroutine of its own with a context cancelled by the owner's cancel of work
// id, the stream's end or the executor's stop; the work counts as held until fn returns.
func (s *session) start(id string, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancelCause(s.ctx)
	s.mu.Lock()
	s.running[id] = cancel
	s.mu.Unlock()
	go func() {
		defer s.ex.work.done()
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
			cancel(nil)
		}()
		fn(ctx)
	}()
}

// cancelRun cancels running work id (if it runs here) with the owner's reason.
func (s *session) cancelRun(id, reason string) {
	s.mu.Lock()
	cancel := s.running[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel(cancelledBy(reason))
	}
}

// progress is the progress report of work id.
func (s *session) progress(id string) func(time.Duration) {
	return func(extend time.Duration) {
		s.out.push(&chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Progress{Progress: &chronologv1.Progress{WorkId: id, ExtendMs: ms(extend)}}})
	}
}
