package chronolog

import (
	"context"
	"fmt"

	chronologv1 "github.com/chronolog/chronolog/sdk/go/gen/chronolog/v1"
)

// deliver runs delivery d on a goroutine of its own and acknowledges it: OK when its handler
// returned nil, TERMINAL_ERROR for a TerminalError (or no handler here), ERROR otherwise (a
// panic included). An ack for a stream that ended is dropped: the owner delivers the event again.
func (s *session) deliver(d *chronologv1.Delivery) {
	s.ex.work.add()
	id := d.GetDeliveryId()
	s.start(id, func(ctx context.Context) {
		outcome, message := chronologv1.Outcome_OUTCOME_OK, ""
		if err := s.runDelivery(ctx, d); err != nil {
			outcome, message = chronologv1.Outcome_OUTCOME_ERROR, err.Error()
			if isTerminal(err) {
				outcome = chronologv1.Outcome_OUTCOME_TERMINAL_ERROR
			}
		}
		s.out.ack(&chronologv1.Ack{DeliveryId: id, Outcome: outcome, Error: message})
	})
}

func (s *session) runDelivery(ctx context.Context, d *chronologv1.Delivery) (err error) {
	handler, ok := s.ex.processors[d.GetProcessor()]
	if !ok || handler.Run == nil {
		return Terminalf("no handler for %s", d.GetProcessor())
	}
	delivery, err := newDelivery(s.ex.client, d, s.progress(d.GetDeliveryId()))
	if err != nil {
		return Terminal(fmt.Errorf("the event of delivery %s cannot be read: %w", d.GetDeliveryId(), err))
	}
	defer recovered(&err)
	return handler.Run(ctx, delivery)
}

// invoke runs invocation inv (held work already) on a goroutine of its own and answers it with
// its output, or its error (TERMINAL_ERROR for a TerminalError, an output that is not a JSON
// object, or an action not hosted here). startedLateMs: for a held one, how many ms after its
// hold ended it started. A result for a stream that ended is dropped: the owner runs it elsewhere.
func (s *session) invoke(inv *chronologv1.Invocation, startedLateMs uint32) {
	id := inv.GetInvocationId()
	s.start(id, func(ctx context.Context) {
		result := &chronologv1.ActionResult{InvocationId: id, Outcome: chronologv1.Outcome_OUTCOME_OK, StartedLateMs: startedLateMs}
		output, err := s.runInvocation(ctx, inv)
		if err == nil {
			if result.Output, err = structOf(output, inv.GetAction()+"'s output"); err != nil {
				err = Terminal(err)
			}
		}
		if err != nil {
			result.Output, result.Outcome, result.Error = nil, chronologv1.Outcome_OUTCOME_ERROR, err.Error()
			if isTerminal(err) {
				result.Outcome = chronologv1.Outcome_OUTCOME_TERMINAL_ERROR
			}
		}
		if s.ctx.Err() == nil {
			s.out.result(result)
		}
	})
}

func (s *session) runInvocation(ctx context.Context, inv *chronologv1.Invocation) (output any, err error) {
	action, ok := s.ex.actions[inv.GetAction()]
	if !ok || action.Run == nil {
		return nil, Terminalf("this executor does not host %s", inv.GetAction())
	}
	run, err := newInvocation(s.ex.client, inv, s.progress(inv.GetInvocationId()))
	if err != nil {
		return nil, Terminal(fmt.Errorf("the input of invocation %s cannot be read: %w", inv.GetInvocationId(), err))
	}
	defer recovered(&err)
	return action.Run(ctx, run)
}

// recovered turns a handler's panic into its error (the try fails and is retried), instead of
// ending the executor's process.
func recovered(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("panic: %v", p)
	}
}
