package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// terminalReporter is a reader or writer that knows whether it is a
// terminal, for streams that are not an *os.File (tests stand in for a
// terminal with one).
type terminalReporter interface {
	IsTerminal() bool
}

// isTerminal reports whether stream (stdin, stdout or stderr) is a
// terminal: a character device other than the null device.
func isTerminal(stream any) bool {
	switch s := stream.(type) {
	case terminalReporter:
		return s.IsTerminal()
	case *os.File:
		info, err := s.Stat()
		if err != nil || info.Mode()&os.ModeCharDevice == 0 {
			return false
		}
		// /dev/null is a character device too; output sent there is
		// not watched.
		null, err := os.Stat(os.DevNull)
		return err != nil || !os.SameFile(info, null)
	}
	return false
}

// canAnimate reports whether a spinner may be drawn on w: a terminal that
// understands the line-erasing escape sequence.
func canAnimate(w io.Writer) bool {
	if _, ok := w.(*os.File); ok && os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// Spinner drawing.
const (
	// spinnerInterval is how often the spinner moves.
	spinnerInterval = 100 * time.Millisecond
	// eraseLine returns to the start of the line and erases it.
	eraseLine = "\r\x1b[K"
	// labelThinking is the spinner's label while the model works.
	labelThinking = "thinking…"
)

// spinnerFrames are the spinner's frames, in order.
var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// spinner draws a one-line "⠋ thinking… 3s" on a terminal while nothing
// else is printed, and erases it before anything else is. Its methods are
// safe to call from one goroutine while its own goroutine animates it; a
// nil *spinner does nothing, so callers need not check.
type spinner struct {
	out     io.Writer
	started time.Time

	mu      sync.Mutex
	label   string
	waiting bool // frames are drawn
	visible bool // a frame is on the line now
	frame   int

	stop chan struct{}
	done chan struct{}
}

// startSpinner draws the first frame of label on out at once and animates
// it until [spinner.close].
func startSpinner(out io.Writer, label string) *spinner {
	s := &spinner{out: out, started: time.Now(), label: label, waiting: true, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	s.draw()
	s.mu.Unlock()
	go s.animate()
	return s
}

func (s *spinner) animate() {
	defer close(s.done)
	ticker := time.NewTicker(spinnerInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
			s.mu.Lock()
			if s.waiting {
				s.frame++
				s.draw()
			}
			s.mu.Unlock()
		}
	}
}

// draw writes the current frame over the line; s.mu is held.
func (s *spinner) draw() {
	text := fmt.Sprintf("%c %s", spinnerFrames[s.frame%len(spinnerFrames)], s.label)
	if elapsed := time.Since(s.started); elapsed >= time.Second {
		text += fmt.Sprintf(" %ds", int(elapsed.Seconds()))
	}
	fmt.Fprint(s.out, eraseLine+text)
	s.visible = true
}

// wait shows the spinner with label, until [spinner.hide].
func (s *spinner) wait(label string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.label, s.waiting = label, true
	s.draw()
}

// hide erases the spinner and stops drawing it, so that text can be
// printed; [spinner.wait] shows it again.
func (s *spinner) hide() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = false
	if s.visible {
		fmt.Fprint(s.out, eraseLine)
		s.visible = false
	}
}

// close erases the spinner for good and waits for its goroutine to end.
func (s *spinner) close() {
	if s == nil {
		return
	}
	s.hide()
	select {
	case <-s.stop:
		return // closed already
	default:
		close(s.stop)
	}
	<-s.done
}
