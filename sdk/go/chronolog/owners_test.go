package chronolog

import (
	"errors"
	"testing"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestOwnerFailureOf(t *testing.T) {
	refusal := status.Error(codes.Unavailable, "this owner is a standby; the leader is at http://10.0.0.2:50051")
	cases := []struct {
		name string
		err  error
		want *ownerFailure
	}{
		{"a standby naming the leader in its trailer", &trailedError{err: status.Error(codes.Unavailable, "this owner is a standby; the leader is at http://a:1"), trailer: metadata.Pairs(leaderKey, "http://b:2")}, &ownerFailure{kind: standby, leader: "http://b:2"}},
		{"a standby naming the leader in its message only", refusal, &ownerFailure{kind: standby, leader: "http://10.0.0.2:50051"}},
		{"a standby that knows no leader", status.Error(codes.Unavailable, "this owner is a standby; no leader is known yet"), &ownerFailure{kind: standby}},
		{"connection refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), &ownerFailure{kind: unreached}},
		{"the connection dropped", status.Error(codes.Unavailable, "error reading from server: EOF"), &ownerFailure{kind: lost}},
		{"the owner stopping", status.Error(codes.Unavailable, "the owner is stopping; call again when it is back"), &ownerFailure{kind: lost}},
		{"an answer of the owner", status.Error(codes.InvalidArgument, "data of order.placed does not match its schema"), nil},
		{"no executor for an action", status.Error(codes.Unavailable, "no executor hosts goshop.price"), nil},
		{"not a call's error", errors.New("boom"), nil},
	}
	for _, c := range cases {
		got := ownerFailureOf(c.err)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestOwnersRouteToTheLeaderOrTheNext(t *testing.T) {
	o := &owners{urls: []string{"http://a:1", "http://b:2"}}
	o.route("http://a:1", &ownerFailure{kind: standby, leader: "http://c:3"})
	if o.urls[o.current] != "http://c:3" || len(o.urls) != 3 {
		t.Fatalf("a leader not given is added and chosen, got %v at %d", o.urls, o.current)
	}
	o.route("http://c:3", &ownerFailure{kind: standby, leader: "http://b:2/"})
	if o.current != 1 {
		t.Fatalf("a known leader is chosen, got %d", o.current)
	}
	o.route("http://a:1", &ownerFailure{kind: unreached})
	if o.current != 1 {
		t.Fatal("a failure of an owner calls moved away from already changes nothing")
	}
	o.route("http://b:2", &ownerFailure{kind: unreached})
	if o.current != 2 {
		t.Fatalf("an owner not reached: the next one, got %d", o.current)
	}
	if o.pause(1) != 0 || o.pause(2) != 0 || o.pause(3) != 100*time.Millisecond || o.pause(4) != 200*time.Millisecond || o.pause(20) != time.Second {
		t.Fatal("no pause until each owner had its turn, then 100 ms doubling up to 1 s")
	}
	if !o.retries(&ownerFailure{kind: lost}, true) || o.retries(&ownerFailure{kind: lost}, false) || !o.retries(&ownerFailure{kind: unreached}, false) {
		t.Fatal("a lost call is made again only when repeatable; an unreached one always, with several owners")
	}
	one := &owners{urls: []string{"http://a:1"}}
	if one.retries(&ownerFailure{kind: unreached}, true) || !one.retries(&ownerFailure{kind: standby}, false) {
		t.Fatal("one owner: only a standby's refusal is tried again")
	}
}

func TestRepeatable(t *testing.T) {
	if !repeatable("/chronolog.v1.LogService/ReadLog", nil) || !repeatable("/chronolog.v1.LogService/GetEvent", nil) {
		t.Fatal("reads are repeatable")
	}
	if !repeatable("/chronolog.v1.LogService/Emit", &chronologv1.EmitRequest{Id: "e-1"}) || repeatable("/chronolog.v1.LogService/Emit", &chronologv1.EmitRequest{}) {
		t.Fatal("an Emit is repeatable when it names its id")
	}
	if repeatable("/chronolog.v1.ActionService/CallAction", &chronologv1.CallActionRequest{CallId: "c"}) {
		t.Fatal("a call is not")
	}
}

func TestOwnerURLs(t *testing.T) {
	if urls, err := ownerURLs("http://a:1, https://b:2"); err != nil || len(urls) != 2 || urls[1] != "https://b:2" {
		t.Fatalf("a comma-separated list, got %v %v", urls, err)
	}
	if _, err := ownerURLs("http://a:1,b:2"); err == nil || err.Error() != `owner url "b:2" (entry 1): expected http://host:port or https://host:port` {
		t.Fatalf("the bad entry is named, got %v", err)
	}
}
