package chronolog

import (
	"context"
	"fmt"
	"sort"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
)

// Plugin is a plugin defined in code: its manifest (registered by the owner from the executor's
// hello) and the handlers of its processors and actions.
type Plugin struct {
	// Name: lowercase letters, digits, `-` and `_`; unique in the owner.
	Name string
	// Version is a free-form label, e.g. `1.2.0`.
	Version string
	// Events are its event types, by name (e.g. `order.placed`).
	Events map[string]EventType
	// Processors, by name: called as `<Name>.<processor>`.
	Processors map[string]Processor
	// Actions, by name: called as `<Name>.<action>`.
	Actions map[string]Action
	// Collections, by global name, as in the manifest.
	Collections map[string]*chronologv1.CollectionDeclaration
	// Schedules, by name, as in the manifest; their actions run in executors hosting them.
	Schedules map[string]*chronologv1.ScheduleDeclaration
	// Pulses, by name, as in the manifest: the executor hosts each (its hello lists them), and its
	// calls arrive as invocations of its action with Invocation.Pulse set.
	Pulses map[string]*chronologv1.PulseDeclaration
}

// EventType declares an event type.
type EventType struct {
	// Schema is a JSON Schema (draft 2020-12) for the data, e.g. a map[string]any (nil: any object).
	Schema any
	// Allow says who may emit it from outside: `*`, `role:<role>` or principal names (none: only
	// code under a cause).
	Allow []string
	// Read says who may read it besides admins and the executors that may host the plugin: `*`,
	// `role:<role>` or principal names (none: every principal reaching the event's space).
	Read []string
	// Description is for people.
	Description string
}

// Start is where a new processor's cursor starts.
type Start struct {
	beginning bool
	afterSeq  uint64
}

// StartAtEnd starts after the last event at registration (the default).
var StartAtEnd = Start{}

// StartAtBeginning starts from the first event.
var StartAtBeginning = Start{beginning: true}

// StartAfterSeq starts after seq.
func StartAfterSeq(seq uint64) Start { return Start{afterSeq: seq} }

// Processor reacts to events: the owner delivers each matching event, at least once and in order
// per key, and Run handles it.
type Processor struct {
	// On are the event types it reacts to (none: every type).
	On []string
	// Where is a MongoDB filter on the event's data (nil: none).
	Where any
	// Key is a path into the event giving its lane key, e.g. `data.order_id` (one event at a time
	// per key); "": every event is its own lane.
	Key string
	// Concurrency is the lanes in flight at once (0: the owner's default, 1).
	Concurrency uint32
	// AckTimeout: a delivery not acknowledged within it fails (0: the owner's default, 30 s).
	AckTimeout time.Duration
	// TimeoutGrace: after a try's ack timeout its context is cancelled and the owner waits this
	// long more for its ack before the next try (nil: AckTimeout again).
	TimeoutGrace *time.Duration
	// RetryDelays are the waits between tries; their number + 1 is the number of tries (none: the
	// owner's default, 1 s then 5 s).
	RetryDelays []time.Duration
	// Start is where a new processor starts (default StartAtEnd).
	Start Start
	// Read says who may read its processor.* events besides admins and the executors that may host
	// the plugin (none: no one else).
	Read []string
	// Run handles one delivery: nil acknowledges it, an error fails the try (retried per
	// RetryDelays), a TerminalError fails the delivery without further tries. ctx is cancelled
	// when the owner cancels the try (its ack timeout passed), the stream breaks or the executor
	// stops.
	Run func(ctx context.Context, d *Delivery) error
}

// Action is an action in code.
//
// Failure semantics: Run's output (a JSON object; nil is `{}`) is the call's, recorded as
// action.completed; an error records action.failed and the caller gets ABORTED with its message
// (the owner never retries an action by itself). A caller calling again with the same call id runs
// it again (Attempt > 1); work under the run (Emit, Call) gets the same derived ids, so it is not
// done twice. ctx is cancelled when the caller cancels, its deadline or the action's timeout
// passes, the stream to the owner is lost or the executor stops.
type Action struct {
	// InputSchema is a JSON Schema (draft 2020-12) for the input (nil: any object).
	InputSchema any
	// PrivateFields are top-level input fields kept out of the log; Run still gets them.
	PrivateFields []string
	// Record: record action.started / completed / failed (nil: true).
	Record *bool
	// Allow says who may call it from outside (none: only code under a cause).
	Allow []string
	// Timeout is how long one run may take (0: the owner's default, 30 s).
	Timeout time.Duration
	// Read says who may read its action.* events (inputs, outputs, errors) and its timers' timer.*
	// events besides admins and the executors that may host the plugin (none: no one else).
	Read []string
	// TimeoutGrace: after the run's timeout its context is cancelled and the owner waits this long
	// more for its answer (nil: Timeout again).
	TimeoutGrace *time.Duration
	// Run runs one call.
	Run func(ctx context.Context, inv *Invocation) (any, error)
}

// manifest is the plugin's manifest: everything but the code.
func (p *Plugin) manifest() (*chronologv1.PluginManifest, error) {
	m := &chronologv1.PluginManifest{
		Name: p.Name, Version: p.Version,
		Events: map[string]*chronologv1.EventTypeDeclaration{}, Processors: map[string]*chronologv1.ProcessorDeclaration{}, Actions: map[string]*chronologv1.ActionDeclaration{},
		Collections: p.Collections, Schedules: p.Schedules, Pulses: p.Pulses,
	}
	for name, e := range p.Events {
		schema, err := optionalStruct(e.Schema, fmt.Sprintf("events[%q].Schema", name))
		if err != nil {
			return nil, err
		}
		m.Events[name] = &chronologv1.EventTypeDeclaration{Schema: schema, Allow: e.Allow, Read: e.Read, Description: e.Description}
	}
	for name, d := range p.Processors {
		where, err := optionalStruct(d.Where, fmt.Sprintf("processors[%q].Where", name))
		if err != nil {
			return nil, err
		}
		decl := &chronologv1.ProcessorDeclaration{On: d.On, Where: where, Key: d.Key, Concurrency: d.Concurrency, AckTimeoutMs: ms(d.AckTimeout), TimeoutGraceMs: optionalMs(d.TimeoutGrace), Start: d.Start.proto(), Read: d.Read}
		for _, delay := range d.RetryDelays {
			decl.RetryDelaysMs = append(decl.RetryDelaysMs, ms(delay))
		}
		m.Processors[name] = decl
	}
	for name, a := range p.Actions {
		schema, err := optionalStruct(a.InputSchema, fmt.Sprintf("actions[%q].InputSchema", name))
		if err != nil {
			return nil, err
		}
		m.Actions[name] = &chronologv1.ActionDeclaration{InputSchema: schema, PrivateFields: a.PrivateFields, Record: a.Record, Allow: a.Allow, TimeoutMs: ms(a.Timeout), TimeoutGraceMs: optionalMs(a.TimeoutGrace), Read: a.Read}
	}
	return m, nil
}

// hosted are the names `<plugin>.<name>` of a map's keys, sorted.
func hosted[T any](plugin string, byName map[string]T) []string {
	names := sortedKeys(byName)
	for i, name := range names {
		names[i] = plugin + "." + name
	}
	return names
}

// sortedKeys are a map's keys, sorted.
func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s Start) proto() *chronologv1.StartPosition {
	switch {
	case s.beginning:
		return &chronologv1.StartPosition{Position: &chronologv1.StartPosition_Beginning{Beginning: true}}
	case s.afterSeq > 0:
		return &chronologv1.StartPosition{Position: &chronologv1.StartPosition_AfterSeq{AfterSeq: s.afterSeq}}
	default:
		return &chronologv1.StartPosition{Position: &chronologv1.StartPosition_End{End: true}}
	}
}

// ms is d in whole ms, as a uint32 field takes it (0 for none or less).
func ms(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32(min(d.Milliseconds(), int64(^uint32(0))))
}

func optionalMs(d *time.Duration) *uint32 {
	if d == nil {
		return nil
	}
	v := ms(*d)
	return &v
}
