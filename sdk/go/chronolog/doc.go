// Package chronolog is the Go SDK of Chronolog: a small client (Emit, Call, GetEvent, ReadLog)
// and an executor that hosts processors and actions over the owner's Subscribe stream.
//
// Declare a plugin with its event types, processors and actions, then start an executor:
//
//	shop := &chronolog.Plugin{
//		Name:   "goshop",
//		Events: map[string]chronolog.EventType{"order.placed": {Allow: []string{"*"}}, "order.priced": {}},
//		Actions: map[string]chronolog.Action{"price": {Run: price}},
//		Processors: map[string]chronolog.Processor{"pricer": {On: []string{"order.placed"}, Run: pricer}},
//	}
//	ex, err := chronolog.StartExecutor(chronolog.ExecutorOptions{Options: chronolog.Options{URL: url, Token: token}, Plugins: []*chronolog.Plugin{shop}})
//	...
//	ex.Stop(5 * time.Second) // on SIGTERM: finishes and answers what it holds, then closes
//
// The executor speaks the protocol described in docs/executor-protocol.md, as the TypeScript
// and Python SDKs do: hello, credits, batched deliveries and acks, invocations and results,
// holds, heartbeats, cancellations, reconnects with backoff, and following the leader among
// several owners.
package chronolog
