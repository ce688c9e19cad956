// goshop: a Chronolog executor written in Go.
//
// It carries the plugin goshop, registered by the owner from its hello:
//
//   - event order.placed (anyone may emit it) and order.priced (no allow: only code under a
//     cause may emit it);
//   - action goshop.price: sums price × qty over an order's items (callers from outside may
//     call it too);
//   - action goshop.pack: takes `ms` milliseconds (at most 10 s), a stand-in for slow work that
//     stops when its context is cancelled;
//   - processor goshop.pricer on order.placed (lanes by order id): calls goshop.price and emits
//     order.priced under the delivery. An order with no items fails terminally
//     (processor.failed at once); one marked flaky fails its first try after doing its work, and
//     the retry finds that work in the log (the same derived ids: nothing written twice).
//
// Run it with an owner of its own on 127.0.0.1:50051 (the quick start's plugin shop declares
// order.placed too, and an event type belongs to one plugin):
//
//	bin/chronolog serve --data /tmp/goshop-data &
//	cd examples/go-executor && go run . [--url URL] [--token TOKEN]
//	bin/chronolog emit order.placed '{"order_id":"o-1","items":[{"sku":"tea","price":4.5,"qty":2}]}'
//	bin/chronolog tail
//
// The token may also come from CHRONOLOG_TOKEN, the URL (or several owners' URLs, comma-separated)
// from CHRONOLOG_URL. SIGTERM or Ctrl-C stops it gracefully: the work it holds finishes and is
// answered, then the stream closes (exit status 0). An owner that refuses the token, its
// principal's role or its hello makes it print the owner's message and exit with status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chronolog/chronolog/sdk/go/chronolog"
)

// item is one line of an order.
type item struct {
	SKU   string  `json:"sku"`
	Price float64 `json:"price"`
	Qty   int     `json:"qty"`
}

var itemSchema = map[string]any{
	"type":                 "object",
	"required":             []string{"sku", "price", "qty"},
	"additionalProperties": false,
	"properties": map[string]any{
		"sku":   map[string]any{"type": "string", "minLength": 1},
		"price": map[string]any{"type": "number", "minimum": 0},
		"qty":   map[string]any{"type": "integer", "minimum": 1},
	},
}

// priced is goshop.price's output.
type priced struct {
	Total float64 `json:"total"`
	Items int     `json:"items"`
}

// price sums price × qty in whole cents (each price rounded half up, so 0.1 + 0.2 is 0.3).
func price(_ context.Context, inv *chronolog.Invocation) (any, error) {
	var in struct {
		Items []item `json:"items"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, chronolog.Terminal(err)
	}
	cents, count := 0, 0
	for _, it := range in.Items {
		cents += int(math.Floor(it.Price*100+0.5)) * it.Qty
		count += it.Qty
	}
	return priced{Total: float64(cents) / 100, Items: count}, nil
}

// pack waits `ms` milliseconds, or until its context is cancelled (the owner cancelled the call,
// the stream broke): then it fails with the reason.
func pack(ctx context.Context, inv *chronolog.Invocation) (any, error) {
	var in struct {
		OrderID string `json:"order_id"`
		Ms      int    `json:"ms"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, chronolog.Terminal(err)
	}
	select {
	case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		return map[string]any{"order_id": in.OrderID, "packed": true}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// pricer prices a placed order through goshop.price and records order.priced.
func pricer(ctx context.Context, d *chronolog.Delivery) error {
	var order struct {
		OrderID string `json:"order_id"`
		Items   []item `json:"items"`
		Flaky   bool   `json:"flaky"`
	}
	if err := d.Decode(&order); err != nil {
		return chronolog.Terminal(err)
	}
	if len(order.Items) == 0 {
		return chronolog.Terminalf("order %s has no items", order.OrderID)
	}
	res, err := d.Call(ctx, "goshop.price", map[string]any{"items": order.Items}) // position 0 under the delivery
	if err != nil {
		return err
	}
	var p priced
	if err := res.Decode(&p); err != nil {
		return err
	}
	if _, err := d.Emit(ctx, "order.priced", map[string]any{"order_id": order.OrderID, "total": p.Total, "items": p.Items}); err != nil { // position 1
		return err
	}
	if order.Flaky && d.Attempt == 1 {
		return fmt.Errorf("order %s is flaky: failing attempt 1 after its work", order.OrderID)
	}
	return nil
}

var goshop = &chronolog.Plugin{
	Name:    "goshop",
	Version: "1",
	Events: map[string]chronolog.EventType{
		"order.placed": {
			Description: "A customer placed an order.",
			Allow:       []string{"*"},
			Schema: map[string]any{
				"type":                 "object",
				"required":             []string{"order_id", "items"},
				"additionalProperties": false,
				"properties": map[string]any{
					"order_id": map[string]any{"type": "string", "minLength": 1},
					"items":    map[string]any{"type": "array", "items": itemSchema},
					"flaky":    map[string]any{"type": "boolean"},
				},
			},
		},
		"order.priced": {
			Description: "goshop.pricer priced an order (emitted under the order.placed delivery).",
			Schema: map[string]any{
				"type":       "object",
				"required":   []string{"order_id", "total", "items"},
				"properties": map[string]any{"order_id": map[string]any{"type": "string"}, "total": map[string]any{"type": "number"}, "items": map[string]any{"type": "integer"}},
			},
		},
	},
	Actions: map[string]chronolog.Action{
		"price": {Allow: []string{"*"}, InputSchema: map[string]any{"type": "object", "required": []string{"items"}, "properties": map[string]any{"items": map[string]any{"type": "array", "items": itemSchema}}}, Run: price},
		"pack":  {Allow: []string{"*"}, InputSchema: map[string]any{"type": "object", "required": []string{"order_id", "ms"}, "properties": map[string]any{"order_id": map[string]any{"type": "string"}, "ms": map[string]any{"type": "integer", "minimum": 0, "maximum": 10000}}}, Run: pack},
	},
	Processors: map[string]chronolog.Processor{
		"pricer": {On: []string{"order.placed"}, Key: "data.order_id", RetryDelays: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, Run: pricer},
	},
}

func main() {
	url := flag.String("url", envOr("CHRONOLOG_URL", "http://127.0.0.1:50051"), "the owner's URL, or several owners' URLs comma-separated")
	token := flag.String("token", os.Getenv("CHRONOLOG_TOKEN"), "an executor principal's bearer token")
	credits := flag.Uint("credits", 8, "deliveries and invocations accepted at once")
	flag.Parse()

	ex, err := chronolog.StartExecutor(chronolog.ExecutorOptions{
		Options: chronolog.Options{URL: *url, Token: *token},
		Plugins: []*chronolog.Plugin{goshop}, Credits: uint32(*credits), MaxBackoff: time.Second,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "goshop: %v\n", err)
		os.Exit(2)
	}
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	go func() {
		<-stop.Done()
		ex.Stop(5 * time.Second)
	}()
	ready, cancelReady := context.WithTimeout(stop, 30*time.Second)
	if ex.Ready(ready) == nil {
		fmt.Fprintln(os.Stderr, "executor ready")
	}
	cancelReady()
	if err := ex.Wait(); err != nil {
		// The owner refused the stream for good (a bad token, a role that may not subscribe, a
		// rejected hello); the executor already printed the owner's message and stopped.
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
