package chronolog

import (
	"context"
	"encoding/json"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
)

// Client calls an owner (or the leader among several): emits, action calls and reads. The raw
// generated clients are there for everything else (Admin, Plugins, Time, Collections); they send
// to the leader too.
type Client struct {
	owners *owners
	// Log is the LogService (Emit, EmitBatch, ReadLog, GetEvent, Watch, Publish).
	Log chronologv1.LogServiceClient
	// Actions is the ActionService (CallAction).
	Actions chronologv1.ActionServiceClient
	// Admin is the AdminService (processors, cursors, failed deliveries, executors).
	Admin chronologv1.AdminServiceClient
	// Plugins is the PluginService.
	Plugins chronologv1.PluginServiceClient
	// Time is the TimeService (timers, schedules, delays).
	Time chronologv1.TimeServiceClient
	// Collections is the CollectionService (documents).
	Collections chronologv1.CollectionServiceClient
}

// NewClient prepares a client for the owners of o; it connects on the first call.
func NewClient(o Options) (*Client, error) {
	ow, err := newOwners(o)
	if err != nil {
		return nil, err
	}
	return &Client{
		owners:      ow,
		Log:         chronologv1.NewLogServiceClient(ow),
		Actions:     chronologv1.NewActionServiceClient(ow),
		Admin:       chronologv1.NewAdminServiceClient(ow),
		Plugins:     chronologv1.NewPluginServiceClient(ow),
		Time:        chronologv1.NewTimeServiceClient(ow),
		Collections: chronologv1.NewCollectionServiceClient(ow),
	}, nil
}

// Close closes the connections.
func (c *Client) Close() error { return c.owners.close() }

// EmitOptions are the optional parts of an emit.
type EmitOptions struct {
	// ID is an idempotency key: an id already in the log with the same type and data answers the
	// stored event (Existing) and writes nothing.
	ID string
	// Actor holds the actor fields to assert (the principal must allow them).
	Actor *Actor
}

// Emitted is an emit's answer.
type Emitted struct {
	// Event is the event as it stands in the log.
	Event *Event
	// Existing is true when its id was in the log already: nothing was written.
	Existing bool
}

// Emit commits one event of type eventType whose data is data (a JSON object: a struct, a map,
// json.RawMessage; nil is `{}`); it returns once the event is durable. An Emit naming its ID is
// made again at another owner after a lost connection, and is written once.
func (c *Client) Emit(ctx context.Context, eventType string, data any, o EmitOptions) (*Emitted, error) {
	return c.emit(ctx, eventType, data, &chronologv1.EmitRequest{Id: o.ID, Actor: o.Actor.proto()})
}

func (c *Client) emit(ctx context.Context, eventType string, data any, req *chronologv1.EmitRequest) (*Emitted, error) {
	b, err := jsonOf(data, "data")
	if err != nil {
		return nil, err
	}
	req.Type, req.DataJson = eventType, b
	res, err := c.Log.Emit(ctx, req)
	if err != nil {
		return nil, err
	}
	e, err := eventOf(res.GetEvent())
	if err != nil {
		return nil, err
	}
	return &Emitted{Event: e, Existing: res.GetExisting()}, nil
}

// CallOptions are the optional parts of an action call.
type CallOptions struct {
	// CallID is an idempotency key: a call id that already completed answers from the log.
	CallID string
	// Actor holds the actor fields to assert (from outside; the principal must allow them).
	Actor *Actor
}

// CallResult is an action call's answer.
type CallResult struct {
	// CallID is the call id (given or derived).
	CallID string
	// Output is the action's output, a JSON object.
	Output json.RawMessage
	// FromLog is true when the call was answered from the log without running.
	FromLog bool
}

// Decode unmarshals the output into v.
func (r *CallResult) Decode(v any) error { return json.Unmarshal(r.Output, v) }

// Call calls action `plugin.action` with input (a JSON object; nil is `{}`) and waits for its
// output. ctx's deadline bounds the wait for an executor and the run; cancelling ctx cancels the
// run. A failed run is ABORTED with the action's error; no executor in time, UNAVAILABLE.
func (c *Client) Call(ctx context.Context, action string, input any, o CallOptions) (*CallResult, error) {
	return c.call(ctx, action, input, &chronologv1.CallActionRequest{CallId: o.CallID, Actor: o.Actor.proto()})
}

func (c *Client) call(ctx context.Context, action string, input any, req *chronologv1.CallActionRequest) (*CallResult, error) {
	s, err := structOf(input, "input")
	if err != nil {
		return nil, err
	}
	req.Action, req.Input = action, s
	res, err := c.Actions.CallAction(ctx, req)
	if err != nil {
		return nil, err
	}
	out, err := jsonOfStruct(res.GetOutput())
	if err != nil {
		return nil, err
	}
	return &CallResult{CallID: res.GetCallId(), Output: out, FromLog: res.GetFromLog()}, nil
}

// GetEvent reads one event by its id (NOT_FOUND when absent).
func (c *Client) GetEvent(ctx context.Context, id string) (*Event, error) {
	res, err := c.Log.GetEvent(ctx, &chronologv1.GetEventRequest{Id: id})
	if err != nil {
		return nil, err
	}
	return eventOf(res.GetEvent())
}

// ReadOptions select a page of the log.
type ReadOptions struct {
	// AfterSeq: events with a greater seq (0: from the start).
	AfterSeq uint64
	// Types: only these event types (none: every type).
	Types []string
	// Where is a MongoDB filter on the events' data (nil: none).
	Where any
	// PageSize: at most this many events (default 100, at most 1000).
	PageSize uint32
	// PageToken continues from a page's NextPageToken (overrides AfterSeq).
	PageToken string
	// FromFirstSeq: when retention removed events after AfterSeq (or the page token's position),
	// read from where the log now starts instead of failing with OUT_OF_RANGE, reason
	// BEFORE_LOG_START.
	FromFirstSeq bool
}

// Page is a page of the log.
type Page struct {
	// Events in seq order.
	Events []*Event
	// NextPageToken continues the read; "" when it reached the head.
	NextPageToken string
	// HeadSeq is the log's last seq when the page was read.
	HeadSeq uint64
	// FirstSeq is where the log starts, its lowest seq still stored (0: empty); retention moves it.
	FirstSeq uint64
}

// ReadLog reads one page of the log.
func (c *Client) ReadLog(ctx context.Context, o ReadOptions) (*Page, error) {
	where, err := optionalStruct(o.Where, "where")
	if err != nil {
		return nil, err
	}
	res, err := c.Log.ReadLog(ctx, &chronologv1.ReadLogRequest{AfterSeq: o.AfterSeq, PageSize: o.PageSize, PageToken: o.PageToken, Types: o.Types, Where: where, FromFirstSeq: o.FromFirstSeq})
	if err != nil {
		return nil, err
	}
	page := &Page{NextPageToken: res.GetNextPageToken(), HeadSeq: res.GetHeadSeq(), FirstSeq: res.GetFirstSeq()}
	for _, pe := range res.GetEvents() {
		e, err := eventOf(pe)
		if err != nil {
			return nil, err
		}
		page.Events = append(page.Events, e)
	}
	return page, nil
}
