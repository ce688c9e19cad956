package chronolog

import (
	"context"
	"testing"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// removedLog answers ReadLog as an owner whose retention removed seqs 1 to 40: a read from below
// the log's start fails with OUT_OF_RANGE unless it asks to start at the first kept seq.
type removedLog struct {
	chronologv1.LogServiceClient
	asked []*chronologv1.ReadLogRequest
}

func (l *removedLog) ReadLog(_ context.Context, in *chronologv1.ReadLogRequest, _ ...grpc.CallOption) (*chronologv1.ReadLogResponse, error) {
	l.asked = append(l.asked, in)
	if in.GetAfterSeq() < 40 && !in.GetFromFirstSeq() {
		return nil, status.Error(codes.OutOfRange, "events after seq 5 were removed by retention: the log starts at seq 41")
	}
	event := &chronologv1.Event{Seq: 41, Id: "e41", Type: "note.added", DataJson: []byte(`{"i":41}`)}
	return &chronologv1.ReadLogResponse{Events: []*chronologv1.Event{event}, HeadSeq: 41, FirstSeq: 41}, nil
}

func TestReadLogFromFirstSeq(t *testing.T) {
	log := &removedLog{}
	c := &Client{Log: log}
	if _, err := c.ReadLog(context.Background(), ReadOptions{AfterSeq: 5}); status.Code(err) != codes.OutOfRange {
		t.Fatalf("a read from below the log's start without FromFirstSeq: got %v, want OUT_OF_RANGE", err)
	}
	page, err := c.ReadLog(context.Background(), ReadOptions{AfterSeq: 5, FromFirstSeq: true, Types: []string{"note.added"}})
	if err != nil {
		t.Fatal(err)
	}
	if sent := log.asked[1]; !sent.GetFromFirstSeq() || sent.GetAfterSeq() != 5 || len(sent.GetTypes()) != 1 {
		t.Fatalf("the request carries FromFirstSeq with the other options, got %v", sent)
	}
	if page.FirstSeq != 41 || page.HeadSeq != 41 || len(page.Events) != 1 || page.Events[0].Seq != 41 {
		t.Fatalf("the page reads from the log's start and says where it is, got %+v", page)
	}
}
