package chronolog

import (
	"strings"
	"testing"
	"unicode/utf8"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func ack(id string) *chronologv1.SubscribeRequest {
	return &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Ack{Ack: &chronologv1.Ack{DeliveryId: id}}}
}

func result(id string) *chronologv1.SubscribeRequest {
	return &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_ActionResult{ActionResult: &chronologv1.ActionResult{InvocationId: id}}}
}

func progress(id string) *chronologv1.SubscribeRequest {
	return &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Progress{Progress: &chronologv1.Progress{WorkId: id}}}
}

// shape names each message written: `ack a`, `acks a,b`, `result r`, `results r,s`, `progress p`.
func shape(messages []*chronologv1.SubscribeRequest) []string {
	var out []string
	for _, m := range messages {
		switch v := m.Message.(type) {
		case *chronologv1.SubscribeRequest_Ack:
			out = append(out, "ack "+v.Ack.DeliveryId)
		case *chronologv1.SubscribeRequest_Acks:
			var ids []string
			for _, a := range v.Acks.Acks {
				ids = append(ids, a.DeliveryId)
			}
			out = append(out, "acks "+strings.Join(ids, ","))
		case *chronologv1.SubscribeRequest_ActionResult:
			out = append(out, "result "+v.ActionResult.InvocationId)
		case *chronologv1.SubscribeRequest_ActionResults:
			var ids []string
			for _, r := range v.ActionResults.Results {
				ids = append(ids, r.InvocationId)
			}
			out = append(out, "results "+strings.Join(ids, ","))
		case *chronologv1.SubscribeRequest_Progress:
			out = append(out, "progress "+v.Progress.WorkId)
		}
	}
	return out
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestBatchedKeepsOrderAndJoinsRuns(t *testing.T) {
	queued := []*chronologv1.SubscribeRequest{ack("a"), ack("b"), progress("p"), ack("c"), result("r"), result("s"), ack("d")}
	equal(t, shape(batched(queued, true, 1<<20)), []string{"acks a,b", "progress p", "ack c", "results r,s", "ack d"})
	// An owner whose welcome does not say it reads ActionResultBatch gets one result a message.
	equal(t, shape(batched(queued, false, 1<<20)), []string{"acks a,b", "progress p", "ack c", "result r", "result s", "ack d"})
}

func TestBatchedStaysWithinItemsAndBytes(t *testing.T) {
	var queued []*chronologv1.SubscribeRequest
	for range maxBatchItems + 3 {
		queued = append(queued, ack("x"))
	}
	got := batched(queued, true, 1<<20)
	if len(got) != 2 || len(got[0].GetAcks().GetAcks()) != maxBatchItems || len(got[1].GetAcks().GetAcks()) != 3 {
		t.Fatalf("256 acks then 3, got %q", shape(got))
	}
	// A budget of about two acks' bytes: batches of two, and one alone at the end.
	equal(t, shape(batched([]*chronologv1.SubscribeRequest{ack("a"), ack("b"), ack("c")}, true, 10)), []string{"acks a,b", "ack c"})
}

func TestCutToFit(t *testing.T) {
	if got := cutToFit("short", 4<<20); got != "short" {
		t.Fatalf("a short error is kept whole, got %q", got)
	}
	long := strings.Repeat("é", 200) // 400 bytes
	got := cutToFit(long, 1024)      // room: 1024 / 8 / 2 = 64 bytes
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "… (cut from 400 bytes: the owner reads at most 1024 bytes a message)") || !strings.HasPrefix(got, strings.Repeat("é", 32)+"…") {
		t.Fatalf("cut at 64 bytes on a character's boundary, saying how long it was, got %q", got)
	}
}

func TestResultTooLargeIsATerminalError(t *testing.T) {
	o := newOutgoing()
	o.welcome(&chronologv1.Welcome{MaxMessageBytes: 1024, ActionResultBatches: true})
	big, _ := structpb.NewStruct(map[string]any{"text": strings.Repeat("x", 2000)})
	o.result(&chronologv1.ActionResult{InvocationId: "i-1", Outcome: chronologv1.Outcome_OUTCOME_OK, Output: big, StartedLateMs: 3})
	o.result(&chronologv1.ActionResult{InvocationId: "i-2", Outcome: chronologv1.Outcome_OUTCOME_OK})
	r := o.queue[0].GetActionResult()
	if r.Outcome != chronologv1.Outcome_OUTCOME_TERMINAL_ERROR || r.Output != nil || r.StartedLateMs != 3 || !strings.HasPrefix(r.Error, "the action's output is ") || !strings.HasSuffix(r.Error, "more than the owner reads in one message (1024 bytes): not sent") {
		t.Fatalf("a terminal error in place of the output, got %v", r)
	}
	if o.queue[1].GetActionResult().Outcome != chronologv1.Outcome_OUTCOME_OK {
		t.Fatal("a result that fits is sent as it is")
	}
}
