package chronolog

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/protobuf/proto"
)

// defaultMaxMessageBytes is the owner's limit when its welcome does not say (older owners): 4 MiB.
const defaultMaxMessageBytes = 4 << 20

// maxBatchItems is the most acks or results in one batch message.
const maxBatchItems = 256

// batchShare is a batch's byte budget as a fraction of the owner's largest message.
const batchShare = 8

// outgoing is what one stream sends, written by one goroutine (grpc-go streams take one sender):
// the messages queued while the previous one was written, or by work ending together (see
// gather), go out together, consecutive acks as
// one AckBatch and consecutive results as one ActionResultBatch (when the owner's welcome says it
// reads them), each batch within maxBatchItems and an eighth of the owner's largest message.
// Order is kept (a progress report never overtakes its work's ack).
type outgoing struct {
	mu              sync.Mutex
	queue           []*chronologv1.SubscribeRequest
	wake            chan struct{}
	halfClose       bool
	resultBatches   bool
	maxMessageBytes int
}

func newOutgoing() *outgoing {
	return &outgoing{wake: make(chan struct{}, 1), maxMessageBytes: defaultMaxMessageBytes}
}

// push queues a message (dropped after a half-close).
func (o *outgoing) push(m *chronologv1.SubscribeRequest) {
	o.mu.Lock()
	if !o.halfClose {
		o.queue = append(o.queue, m)
	}
	o.mu.Unlock()
	o.signal()
}

func (o *outgoing) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// ack queues an ack, its error cut to fit.
func (o *outgoing) ack(a *chronologv1.Ack) {
	a.Error = cutToFit(a.Error, o.limit())
	o.push(&chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Ack{Ack: a}})
}

// result queues an action's result: its error cut to fit, or a terminal error in its place when
// its output does not fit in one message (the owner would end the stream on it, and the call
// would run again and again).
func (o *outgoing) result(r *chronologv1.ActionResult) {
	limit := o.limit()
	r.Error = cutToFit(r.Error, limit)
	if size := proto.Size(r); size+16 > limit {
		r = &chronologv1.ActionResult{InvocationId: r.InvocationId, Outcome: chronologv1.Outcome_OUTCOME_TERMINAL_ERROR, StartedLateMs: r.StartedLateMs,
			Error: fmt.Sprintf("the action's output is %d bytes encoded, more than the owner reads in one message (%d bytes): not sent", size, limit)}
	}
	o.push(&chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_ActionResult{ActionResult: r}})
}

// welcome takes the owner's welcome: whether it reads ActionResultBatch, and its largest message.
func (o *outgoing) welcome(w *chronologv1.Welcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resultBatches = w.GetActionResultBatches()
	if w.GetMaxMessageBytes() > 0 {
		o.maxMessageBytes = int(w.GetMaxMessageBytes())
	}
}

func (o *outgoing) limit() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.maxMessageBytes
}

// closeSends half-closes the stream after what is queued; later messages are dropped.
func (o *outgoing) closeSends() {
	o.mu.Lock()
	o.halfClose = true
	o.mu.Unlock()
	o.signal()
}

// sender is the part of a stream outgoing writes to.
type sender interface {
	Send(*chronologv1.SubscribeRequest) error
	CloseSend() error
}

// run writes the queue to s until ctx ends or, after a half-close, the queue is empty (then it
// half-closes s). It returns the error of a failed Send (the stream's end says why).
func (o *outgoing) run(ctx context.Context, s sender) error {
	for {
		o.mu.Lock()
		queued, halfClose, resultBatches, limit := o.queue, o.halfClose, o.resultBatches, o.maxMessageBytes
		o.queue = nil
		o.mu.Unlock()
		for _, m := range batched(queued, resultBatches, limit/batchShare) {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		if halfClose && len(queued) == 0 {
			return s.CloseSend()
		}
		if len(queued) > 0 {
			continue
		}
		select {
		case <-o.wake:
			o.gather()
		case <-ctx.Done():
			return nil
		}
	}
}

// gather lets the work that is ending together queue its answers before they are written: it
// yields to the other goroutines for as long as the queue grows (up to a batch). Work handed out
// in one message (a DeliveryBatch) mostly ends together, and one AckBatch then answers it, as the
// TypeScript SDK answers the work that ends in one event-loop turn; without it nearly every ack
// would go alone, a message (and an owner's turn) each.
func (o *outgoing) gather() {
	for n := o.queued(); n > 0 && n < maxBatchItems; {
		runtime.Gosched()
		more := o.queued()
		if more == n {
			return
		}
		n = more
	}
}

func (o *outgoing) queued() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)
}

// batched is the messages as written: runs of acks as AckBatch messages, runs of results as
// ActionResultBatch messages when resultBatches, each within maxBatchItems and maxBytes (a single
// ack or result goes as itself); others as they are, in order.
func batched(queued []*chronologv1.SubscribeRequest, resultBatches bool, maxBytes int) []*chronologv1.SubscribeRequest {
	var out []*chronologv1.SubscribeRequest
	var acks []*chronologv1.Ack
	var results []*chronologv1.ActionResult
	bytes := 0
	flush := func() {
		switch {
		case len(acks) == 1:
			out = append(out, &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Ack{Ack: acks[0]}})
		case len(acks) > 1:
			out = append(out, &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Acks{Acks: &chronologv1.AckBatch{Acks: acks}}})
		case len(results) == 1:
			out = append(out, &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_ActionResult{ActionResult: results[0]}})
		case len(results) > 1:
			out = append(out, &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_ActionResults{ActionResults: &chronologv1.ActionResultBatch{Results: results}}})
		}
		acks, results, bytes = nil, nil, 0
	}
	for _, m := range queued {
		size := proto.Size(m)
		full := bytes+size > maxBytes
		switch v := m.Message.(type) {
		case *chronologv1.SubscribeRequest_Ack:
			if len(results) > 0 || len(acks) == maxBatchItems || (len(acks) > 0 && full) {
				flush()
			}
			acks = append(acks, v.Ack)
			bytes += size
		case *chronologv1.SubscribeRequest_ActionResult:
			if !resultBatches || len(acks) > 0 || len(results) == maxBatchItems || (len(results) > 0 && full) {
				flush()
			}
			results = append(results, v.ActionResult)
			bytes += size
		default:
			flush()
			out = append(out, m)
		}
	}
	flush()
	return out
}

// cutToFit is msg, or its start when it could take more than a batch's share of the owner's
// largest message (maxBytes), saying how long it was: a message the owner cannot read ends the
// stream, and the error would be lost with it.
func cutToFit(msg string, maxBytes int) string {
	room := maxBytes / batchShare / 2
	if len(msg) <= room {
		return msg
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (cut from %d bytes: the owner reads at most %d bytes a message)", msg[:cut], len(msg), maxBytes)
}
