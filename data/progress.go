package data

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressBar renders a one-line download progress bar to w, redrawn in place with a carriage
// return at most every percent or every 200 ms, e.g.
//
//	train-images-idx3-ubyte.gz  45% [=============>                  ]  11.9/26.4 MB
type progressBar struct {
	w           io.Writer
	name        string
	done, total int64
	lastPct     int
	lastDraw    time.Time
}

const progressWidth = 30

func newProgressBar(w io.Writer, name string, done, total int64) *progressBar {
	p := &progressBar{w: w, name: name, done: done, total: total, lastPct: -1}
	p.draw()
	return p
}

// Write counts n bytes as done; it never fails, so it can sit in an io.MultiWriter.
func (p *progressBar) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	p.draw()
	return len(b), nil
}

func (p *progressBar) draw() {
	if p.w == nil {
		return
	}
	pct := 0
	if p.total > 0 {
		pct = int(min(100, 100*p.done/p.total))
	}
	now := time.Now()
	if pct == p.lastPct && now.Sub(p.lastDraw) < 200*time.Millisecond {
		return
	}
	p.lastPct, p.lastDraw = pct, now
	fill := pct * progressWidth / 100
	bar := strings.Repeat("=", fill)
	if fill < progressWidth {
		bar += ">" + strings.Repeat(" ", progressWidth-fill-1)
	}
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r%s %3d%% [%s] %6.1f/%.1f MB", p.name, pct, bar, mb(p.done), mb(p.total))
	} else {
		fmt.Fprintf(p.w, "\r%s %6.1f MB", p.name, mb(p.done))
	}
}

// finish draws the final state and ends the line with msg.
func (p *progressBar) finish(msg string) {
	if p.w == nil {
		return
	}
	p.lastPct = -1
	p.draw()
	fmt.Fprintf(p.w, " %s\n", msg)
}

func mb(n int64) float64 { return float64(n) / 1e6 }
