package chronolog

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ExecutorOptions configure an executor.
type ExecutorOptions struct {
	// Options say how to reach the owners (one URL or several: the executor subscribes to the leader).
	Options
	// Plugins are the plugins it carries: their manifests are registered on hello, and it hosts
	// their processors, actions and pulses.
	Plugins []*Plugin
	// Executor is the name replicas share (default: the first plugin's name).
	Executor string
	// Credits are the deliveries and invocations it accepts at once (default 16).
	Credits uint32
	// NoHolds asks the owner to send calls of time at their moment. By default it sends them up
	// to its clock's lookahead early with hold_ms, and the executor starts each at its moment
	// (counted from when the owner wrote it, on the stream's clock), so neither the owner's pauses
	// nor time spent queued make it late; a held call holds a credit meanwhile.
	NoHolds bool
	// OnError is called on connection trouble, owner notices, an owner whose major or minor
	// version differs from this SDK's, and the owner's refusal for good (default: one line on
	// stderr). It must not block.
	OnError func(err error)
	// MaxBackoff is the longest wait between reconnects (default 5 s).
	MaxBackoff time.Duration
}

// initialBackoff is the first wait before reconnecting; it doubles up to MaxBackoff.
const initialBackoff = 250 * time.Millisecond

// closeWait is how long Stop lets the owner end a half-closed stream before cutting it.
const closeWait = 2 * time.Second

// Executor hosts plugins' processors and actions over the Subscribe stream (see StartExecutor).
type Executor struct {
	opts       ExecutorOptions
	client     *Client
	subscribe  chronologv1.ExecutorServiceClient
	instanceID string
	manifests  []*chronologv1.PluginManifest
	processors map[string]Processor
	actions    map[string]Action
	pulses     []string

	base    context.Context
	stopAll context.CancelFunc
	work    inflight

	mu       sync.Mutex
	current  *session
	closing  bool
	ready    chan struct{}
	welcomed sync.Once
	done     chan struct{}
	fatal    error
	stopOnce sync.Once

	ownerVersionSeen *string
}

// StartExecutor checks the plugins, then connects to the owner (or the leader among several) in
// the background: it says hello, runs the deliveries and invocations it gets (each on a goroutine
// of its own, at most Credits at once, as the owner never sends more), acknowledges each delivery
// (OK, ERROR, or TERMINAL_ERROR for a TerminalError) and answers each invocation, batching what
// ends together, and sends heartbeats at the interval the owner's welcome asks for (an owner
// silent for 3 intervals counts as gone).
//
// When the stream breaks it reconnects with backoff (250 ms doubling up to MaxBackoff); the owner
// runs again what was in flight. Given several owners, a standby's refusal sends it to the
// leader the standby names at once (not reported), an owner that cannot be reached to the next
// one (after each owner had its turn, with pauses of 100 ms doubling up to 1 s).
//
// A refusal that retrying cannot cure is not retried: UNAUTHENTICATED (a missing or unknown
// token), PERMISSION_DENIED (a principal that may not subscribe or host these plugins), or
// INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the welcome (a hello the owner rejects). The
// executor then reports it once (`chronolog executor: UNAUTHENTICATED: unknown bearer token (the
// executor stopped: not retrying)`), stops, and Ready and Wait return it.
func StartExecutor(o ExecutorOptions) (*Executor, error) {
	if len(o.Plugins) == 0 {
		return nil, errors.New("an executor needs at least one plugin")
	}
	client, err := NewClient(o.Options)
	if err != nil {
		return nil, err
	}
	e := &Executor{opts: o, client: client, subscribe: chronologv1.NewExecutorServiceClient(client.owners), instanceID: newInstanceID(),
		processors: map[string]Processor{}, actions: map[string]Action{}, ready: make(chan struct{}), done: make(chan struct{})}
	for _, p := range o.Plugins {
		m, err := p.manifest()
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", p.Name, err)
		}
		e.manifests = append(e.manifests, m)
		for name, d := range p.Processors {
			e.processors[p.Name+"."+name] = d
		}
		for name, a := range p.Actions {
			e.actions[p.Name+"."+name] = a
		}
		e.pulses = append(e.pulses, hosted(p.Name, p.Pulses)...)
	}
	if e.opts.Executor == "" {
		e.opts.Executor = o.Plugins[0].Name
	}
	if e.opts.Credits == 0 {
		e.opts.Credits = 16
	}
	if e.opts.MaxBackoff <= 0 {
		e.opts.MaxBackoff = 5 * time.Second
	}
	e.base, e.stopAll = context.WithCancel(context.Background())
	go e.loop()
	return e, nil
}

// Client is the executor's client (the same owners and token).
func (e *Executor) Client() *Client { return e.client }

// Ready waits for the owner's first welcome. It returns the owner's refusal for good (see
// StartExecutor) when that came first: the executor has then stopped.
func (e *Executor) Ready(ctx context.Context) error {
	select {
	case <-e.ready:
		return nil
	case <-e.done:
		if e.fatal != nil {
			return e.fatal
		}
		return errors.New("the executor stopped before the owner welcomed it")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait blocks until the executor has ended: nil after Stop, the owner's refusal for good (see
// StartExecutor) otherwise, even after an earlier welcome.
func (e *Executor) Wait() error {
	<-e.done
	return e.fatal
}

// Stop tells the owner the executor stops (Stopping: it sends no more work, and answers once nothing
// more is on its way), lets held and running work finish (up to grace; work that comes meanwhile
// included), then half-closes the stream after the acks and results so far: the owner reads them
// and ends the stream (given up to 2 s), so finished work is never run again and the stop is no
// disconnect; what still runs then, the owner runs again elsewhere. It returns once the executor
// has ended. Safe to call more than once.
func (e *Executor) Stop(grace time.Duration) {
	e.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		e.mu.Lock()
		s := e.current
		e.mu.Unlock()
		if s != nil {
			// The owner sends no more work and answers once nothing more is on its way to this executor.
			s.out.push(&chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Stopping{Stopping: &chronologv1.Stopping{GraceMs: uint32(grace.Milliseconds())}}})
			select {
			case <-s.stoppingAnswered:
			case <-s.over:
			case <-ctx.Done():
			}
		}
		e.work.wait(ctx)
		cancel()
		e.mu.Lock()
		e.closing = true
		s = e.current
		e.mu.Unlock()
		if s != nil {
			s.out.closeSends()
			select {
			case <-s.over:
			case <-time.After(closeWait):
			}
		}
		e.stopAll()
	})
	<-e.done
}

// loop opens sessions until stopped, with backoff between them (or the owners' pause, to the
// leader a standby named or the next owner); it ends at the owner's refusal for good.
func (e *Executor) loop() {
	defer close(e.done)
	defer e.client.Close()
	backoff, moves := initialBackoff, 0
	for {
		welcomed := false
		err := e.session(func() { welcomed, backoff, moves = true, initialBackoff, 0 })
		if e.stopped() {
			return
		}
		pause, paused := time.Duration(0), false
		if err != nil {
			if isFatal(err, welcomed) {
				e.fatal = err
				e.report(err)
				e.stopAll()
				return
			}
			f := ownerFailureOf(err)
			if f != nil && e.client.owners.retries(f, false) {
				moves++
				pause, paused = e.client.owners.pause(moves), true
			}
			if f == nil || f.kind != standby || f.leader == "" {
				e.report(err)
			}
		}
		if !paused {
			pause = backoff
			backoff = min(backoff*2, e.opts.MaxBackoff)
		}
		if sleep(e.base, pause) != nil {
			return
		}
	}
}

// stopped is true once Stop half-closed the stream or ended the executor.
func (e *Executor) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closing || e.base.Err() != nil
}

// isFatal is true for a stream error the executor must not retry: UNAUTHENTICATED or
// PERMISSION_DENIED, or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the session's welcome (the
// owner rejected the hello: a manifest that does not register, an unknown processor, action or
// pulse, a hello larger than the owner reads), which the same hello would meet again.
func isFatal(err error, welcomed bool) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	case codes.InvalidArgument, codes.ResourceExhausted:
		return !welcomed
	}
	return false
}

// report hands err to OnError (default: one line on stderr, saying when the executor stopped).
func (e *Executor) report(err error) {
	if e.opts.OnError != nil {
		e.opts.OnError(err)
		return
	}
	suffix := ""
	if err == e.fatal {
		suffix = " (the executor stopped: not retrying)"
	}
	fmt.Fprintf(os.Stderr, "chronolog executor: %s%s\n", Describe(err), suffix)
}

// checkOwnerVersion reports an owner whose version differs from this SDK's in its major or minor
// number, or that does not say it: once per owner version, not at every reconnect.
func (e *Executor) checkOwnerVersion(ownerVersion string) {
	if e.ownerVersionSeen != nil && *e.ownerVersionSeen == ownerVersion {
		return
	}
	e.ownerVersionSeen = &ownerVersion
	if !versionsDiffer(ownerVersion) {
		return
	}
	owner := "the owner is " + ownerVersion
	if ownerVersion == "" {
		owner = "the owner does not say its version (an older owner)"
	}
	e.report(fmt.Errorf("%s, this SDK (%s) is %s: their major or minor versions differ, so one may send what the other does not understand; upgrade them together", owner, SDKName, SDKVersion))
}

// hello is the first message of every stream: what the executor carries and hosts.
func (e *Executor) hello() *chronologv1.SubscribeRequest {
	return &chronologv1.SubscribeRequest{Message: &chronologv1.SubscribeRequest_Hello{Hello: &chronologv1.Hello{
		Executor: e.opts.Executor, InstanceId: e.instanceID, Plugins: e.manifests,
		Processors: sortedKeys(e.processors), Actions: sortedKeys(e.actions), Pulses: e.pulses,
		Credits: e.opts.Credits, Batches: true, InvocationBatches: true, Holds: !e.opts.NoHolds, DataJson: true,
		Sdk: SDKName, SdkVersion: SDKVersion,
	}}}
}

// newInstanceID is a random UUID (version 4): this process among the executor's replicas.
func newInstanceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
