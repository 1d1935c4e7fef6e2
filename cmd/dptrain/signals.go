package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// stopSignals are what an operator (Ctrl-C) and a scheduler or kill (SIGTERM) send to stop a
// run: both cancel the training context, so the run checkpoints and stops. A second signal
// kills the process at once (the handler is removed after the first).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// signalContext returns a context cancelled by the first stop signal and a function that
// reports which signal it was (nil if none).
func signalContext(parent context.Context) (ctx context.Context, received func() os.Signal, stop func()) {
	return signalContextNotify(parent, nil)
}

// signalContextNotify is signalContext calling first (unless nil) with the first stop signal
// as soon as it arrives, before the run has stopped.
func signalContextNotify(parent context.Context, first func(os.Signal)) (ctx context.Context, received func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	c := make(chan os.Signal, 1)
	signal.Notify(c, stopSignals...)
	var got atomic.Value
	done := make(chan struct{})
	go func() {
		select {
		case s := <-c:
			got.Store(s)
			signal.Stop(c)
			cancel()
			if first != nil {
				first(s)
			}
		case <-done:
		}
	}()
	received = func() os.Signal {
		s, _ := got.Load().(os.Signal)
		return s
	}
	stop = func() {
		signal.Stop(c)
		close(done)
		cancel()
	}
	return ctx, received, stop
}

// exitStatus is the conventional status of a process stopped by s: 128 + the signal number
// (130 for SIGINT, 143 for SIGTERM).
func exitStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// exitError carries a process exit status other than 1 to main.
type exitError struct {
	status int
	msg    string
}

func (e *exitError) Error() string { return e.msg }

// printedError is an error the command has printed already, as main prints errors; main
// only sets the exit status.
type printedError struct{ err error }

func (e *printedError) Error() string { return e.err.Error() }
func (e *printedError) Unwrap() error { return e.err }
