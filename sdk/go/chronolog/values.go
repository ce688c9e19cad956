package chronolog

import (
	"encoding/json"
	"fmt"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Event is an event of the log, its data as JSON text.
type Event struct {
	// Seq is its place in the log: dense, from 1, given at commit.
	Seq uint64
	// ID is unique: given by the emitter, made by the owner, or derived from a cause.
	ID string
	// Type is what happened, e.g. `order.placed`.
	Type string
	// Data is what it says: a JSON object.
	Data json.RawMessage
	// Cause is the id of the event that caused it, or "".
	Cause string
	// Actor is who did it; nil means the system.
	Actor *Actor
	// At is its commit time (UTC, ms precision).
	At time.Time
}

// Decode unmarshals the event's data into v (as encoding/json does).
func (e *Event) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// Actor is who acted (ID), on whose behalf (For), in which space (In) and through what (Via).
type Actor struct {
	ID, For, In, Via string
}

func actorOf(a *chronologv1.Actor) *Actor {
	if a == nil {
		return nil
	}
	return &Actor{ID: a.GetId(), For: a.GetFor(), In: a.GetIn(), Via: a.GetVia()}
}

func (a *Actor) proto() *chronologv1.Actor {
	if a == nil {
		return nil
	}
	return &chronologv1.Actor{Id: a.ID, For: a.For, In: a.In, Via: a.Via}
}

// eventOf converts an event as sent: its data from data_json when set (deliveries and emits
// asked for it), else from the Struct.
func eventOf(e *chronologv1.Event) (*Event, error) {
	if e == nil {
		return nil, nil
	}
	data := json.RawMessage(e.GetDataJson())
	if len(data) == 0 {
		var err error
		if data, err = jsonOfStruct(e.GetData()); err != nil {
			return nil, err
		}
	}
	out := &Event{Seq: e.GetSeq(), ID: e.GetId(), Type: e.GetType(), Data: data, Cause: e.GetCause(), Actor: actorOf(e.GetActor())}
	if e.GetAt() != nil {
		out.At = e.GetAt().AsTime()
	}
	return out, nil
}

// jsonOf marshals v, which must make a JSON object (a struct, a map, json.RawMessage, ...), for
// `what` (named in the error): nil is `{}`.
func jsonOf(v any, what string) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("%s must be a JSON object (got %s)", what, clip(b))
	}
	return b, nil
}

// structOf turns v (see jsonOf) into a protobuf Struct.
func structOf(v any, what string) (*structpb.Struct, error) {
	b, err := jsonOf(v, what)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", what, err)
	}
	return structpb.NewStruct(m)
}

// optionalStruct is structOf, nil for nil (an absent schema, filter or input).
func optionalStruct(v any, what string) (*structpb.Struct, error) {
	if v == nil {
		return nil, nil
	}
	return structOf(v, what)
}

// jsonOfStruct is a Struct as JSON text (`{}` for nil).
func jsonOfStruct(s *structpb.Struct) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(s.AsMap())
}

// clip shows the start of b in an error.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
