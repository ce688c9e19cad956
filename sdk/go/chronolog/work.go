package chronolog

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
)

// causeWork is what code under a cause (a delivery's event, an invocation's action.started) does
// through the owner: each emit and call names the cause and its position among the calls made
// under it, counted from 0 and shared, so the owner derives the same ids (and the cause's actor)
// when the work runs again, and answers a repeat from the log instead of doing it twice.
type causeWork struct {
	client   *Client
	eventID  string
	mu       sync.Mutex
	position uint32
	progress func(extend time.Duration)
}

// next is the cause of the next call, taking its position.
func (w *causeWork) next() *chronologv1.Cause {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &chronologv1.Cause{EventId: w.eventID, Position: w.position}
	w.position++
	return c
}

// Emit emits an event under the cause. Its id is derived by the owner from the cause, the call's
// position and its input: a retried run making the same calls finds the same events instead of
// writing them twice. It runs as the cause's actor.
func (w *causeWork) Emit(ctx context.Context, eventType string, data any) (*Event, error) {
	res, err := w.client.emit(ctx, eventType, data, &chronologv1.EmitRequest{Cause: w.next()})
	if err != nil {
		return nil, err
	}
	return res.Event, nil
}

// Call calls action `plugin.action` under the cause: the call id is derived, so a retried run
// gets the recorded output (FromLog) instead of running the action again. Errors as Client.Call.
func (w *causeWork) Call(ctx context.Context, action string, input any) (*CallResult, error) {
	return w.client.call(ctx, action, input, &chronologv1.CallActionRequest{Cause: w.next()})
}

// Progress tells the owner the work still runs: its deadline moves to now + extend (0: the
// processor's ack timeout or the action's timeout).
func (w *causeWork) Progress(extend time.Duration) { w.progress(extend) }

// Delivery is one event handed to a processor. Emit and Call work under its event, positions shared.
type Delivery struct {
	causeWork
	// Event is the event delivered.
	Event *Event
	// Processor is `plugin.processor`.
	Processor string
	// Attempt is 1 for the first try.
	Attempt uint32
	// Retry is true when the delivery ran before (Attempt > 1).
	Retry bool
	// Key is the lane key, "" when the processor has none.
	Key string
	// Debounced is, for a processor that debounces, the events of the key this delivery stands
	// for (its event the last); 0 otherwise.
	Debounced uint32
	// Deadline: acknowledge before it or the try fails.
	Deadline time.Time
}

// Decode unmarshals the event's data into v.
func (d *Delivery) Decode(v any) error { return d.Event.Decode(v) }

// Invocation is one call of an action. Emit and Call work under its action.started, positions shared.
type Invocation struct {
	causeWork
	// Action is `plugin.action`.
	Action string
	// Input is the call's whole input (private fields included), a JSON object.
	Input json.RawMessage
	// CallID is the same for every attempt of the call; for time, the occurrence id.
	CallID string
	// Attempt is 1 for the first run of this call id.
	Attempt uint32
	// Retry is true when the call ran before (Attempt > 1).
	Retry bool
	// Actor is who the call runs as (nil: the system).
	Actor *Actor
	// Deadline: run before it (the earlier of the action's timeout and the caller's deadline).
	Deadline time.Time
	// Scheduled is set when time made the call.
	Scheduled *Scheduled
	// Pulse is set when a pulse made the call.
	Pulse *PulseCall
	// ChainDepth is 0 for a call that starts a chain (a pulse, a schedule, a client's call).
	ChainDepth uint32
}

// Decode unmarshals the input into v.
func (inv *Invocation) Decode(v any) error { return json.Unmarshal(inv.Input, v) }

// Scheduled is what time knows about a call it made.
type Scheduled struct {
	// TimerID is the timer, schedule or delay id.
	TimerID string
	// Due is the moment the occurrence was due (a late call keeps it).
	Due time.Time
	// OccurrenceID is the occurrence id (the call id).
	OccurrenceID string
}

// PulseCall is what a pulse knows about a call it made.
type PulseCall struct {
	// Pulse is `plugin.pulse`.
	Pulse string
	// Interval is the index of the interval within the cycle, from 0.
	Interval uint32
	// Due is the interval's start.
	Due time.Time
}

// newDelivery is the context of delivery d, its progress reports sent by progress.
func newDelivery(client *Client, d *chronologv1.Delivery, progress func(time.Duration)) (*Delivery, error) {
	event, err := eventOf(d.GetEvent())
	if err != nil {
		return nil, err
	}
	return &Delivery{
		causeWork: causeWork{client: client, eventID: event.ID, progress: progress},
		Event:     event, Processor: d.GetProcessor(), Attempt: d.GetAttempt(), Retry: d.GetAttempt() > 1, Key: d.GetKey(), Debounced: d.GetDebounced(), Deadline: d.GetDeadline().AsTime(),
	}, nil
}

// newInvocation is the context of invocation inv. Work under it names its action.started, or the
// call id for an action that records nothing.
func newInvocation(client *Client, inv *chronologv1.Invocation, progress func(time.Duration)) (*Invocation, error) {
	input, err := jsonOfStruct(inv.GetInput())
	if err != nil {
		return nil, err
	}
	cause := inv.GetCauseEventId()
	if cause == "" {
		cause = inv.GetCallId()
	}
	out := &Invocation{
		causeWork: causeWork{client: client, eventID: cause, progress: progress},
		Action:    inv.GetAction(), Input: input, CallID: inv.GetCallId(), Attempt: inv.GetAttempt(), Retry: inv.GetAttempt() > 1,
		Actor: actorOf(inv.GetActor()), Deadline: inv.GetDeadline().AsTime(), ChainDepth: inv.GetChainDepth(),
	}
	if s := inv.GetScheduled(); s != nil {
		out.Scheduled = &Scheduled{TimerID: s.GetTimerId(), Due: s.GetDue().AsTime(), OccurrenceID: s.GetOccurrenceId()}
	}
	if p := inv.GetPulse(); p != nil {
		out.Pulse = &PulseCall{Pulse: p.GetPulse(), Interval: p.GetInterval(), Due: p.GetDue().AsTime()}
	}
	return out, nil
}
