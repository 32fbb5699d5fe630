package clock

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// judgeTiming reports whether t judges its lateness bound here: not under
// the race detector, which slows every goroutine several times over (in
// CI's race step, beside two other packages' tests, wake-ups came 160-320
// µs late at the median and 6.6 ms at the 99th percentile).
// There the waits still run and may not end early; the normal step judges
// the bound (testmode logs the reduction).
func judgeTiming(t *testing.T) bool {
	t.Helper()
	return !testmode.UnderRace(t, "the lateness bound is not judged, only that no wait ends early; the normal step judges it")
}

// A Waiter never returns before the due time, gives up at once when done
// is already closed, and gives up during a wait when done closes.
func TestWaiter(t *testing.T) {
	w := NewWaiter(nil)
	defer w.Close()
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 2 * time.Millisecond, 60 * time.Millisecond} {
		due := time.Now().Add(d)
		if !w.Until(due) {
			t.Fatalf("%v: gave up with done open", d)
		}
		if now := time.Now(); now.Before(due) {
			t.Errorf("%v: returned %v early", d, due.Sub(now))
		}
	}
	done := make(chan struct{})
	close(done)
	if WaitUntil(done, time.Now().Add(time.Hour)) {
		t.Error("waited with done closed")
	}

	done = make(chan struct{})
	cw := NewWaiter(done)
	defer cw.Close()
	go func() { time.Sleep(20 * time.Millisecond); close(done) }()
	t0 := time.Now()
	if cw.Until(time.Now().Add(time.Hour)) {
		t.Error("an hour's wait returned true")
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("gave up %v after done closed, want promptly", took)
	}
	if cw.Until(time.Now().Add(time.Millisecond)) {
		t.Error("waited again after done closed")
	}
}

// The reason the Waiter parks in the netpoller: with one processor, a
// goroutine that waits for a due time must leave it to the others. Here one
// goroutine waits 1 ms at a time, back to back, while another is woken by a
// kernel timer through the netpoller, as a reader of a socket is. A wait
// that held the processor (a nanosleep, a yielding spin) would leave that
// wake-up to the runtime's 10 ms background poll: with a yielding spin in
// its place, the median wake-up came 11.4-11.6 ms late and 191-195 of 200
// more than 2 ms late; with the Waiter, 48-52 µs at the median. The bound
// is on the median, 2 ms: the tail is the machine's (the Waiter's p99 was
// 5.9-7.8 ms beside an apt-get install, and 7.5-10.4 ms in CI's normal
// step, which failed a 5 ms p99 bound in all three attempts).
// Timing-dependent: each attempt's figures are logged.
func TestWaiterLeavesTheProcessor(t *testing.T) {
	judge := judgeTiming(t)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	timing.Retry(t, 3, func(attempt int) []string {
		stop := make(chan struct{})
		go func() {
			w := NewWaiter(stop)
			defer w.Close()
			for w.Until(time.Now().Add(time.Millisecond)) {
			}
		}()
		// A reader of a timer that another waiter arms: woken by the
		// netpoller, as a socket's reader is.
		r := NewWaiter(nil)
		var late []time.Duration
		for range 200 {
			due := time.Now().Add(300 * time.Microsecond)
			if !r.Until(due) {
				t.Fatal("gave up with done open")
			}
			l := time.Since(due)
			if l < 0 {
				t.Fatalf("returned %v early", -l)
			}
			late = append(late, l)
		}
		r.Close()
		close(stop)
		slices.Sort(late)
		p50 := late[len(late)/2]
		t.Logf("attempt %d: wake-up lateness p50 %v, p90 %v, p99 %v, max %v", attempt, p50, late[len(late)*9/10], late[len(late)*99/100], late[len(late)-1])
		if judge && p50 >= 2*time.Millisecond {
			return []string{fmt.Sprintf("a second waiter's wake-ups were held up: median lateness %v (want < 2ms)", p50)}
		}
		return nil
	})
}

// A periodic Waiter (Every) never returns before a due time, and keeps to
// a schedule whose due times drift off its period (1% further apart: the
// rounding of a real schedule drifts far less, but for hours), whose first
// due time is several periods ahead, and which it falls behind: the caller
// busy for 3 periods now and then, so ticks pile up.
//
// Timing-dependent: its median wait may end at most a sixteenth of a
// period (21 µs) later than the median of a one-shot Waiter's, which waits
// on the same period at the same time in another goroutine, so both see
// the machine's load (in CI's race step the median wake-up came 160-320 µs
// late). Every's lead starts at the spin and follows the netpoller's
// lateness, so it ends no later than a one-shot wait; a Waiter that kept
// its first grid instead of arming again where the due times drift off it
// ended 61-83 µs late at the median against a one-shot waiter's 27-37 µs
// here. The tail is the machine's, and not judged; each attempt's figures
// are logged.
func TestWaiterEvery(t *testing.T) {
	rate := 3000.0
	period := time.Duration(float64(time.Second) / rate)
	judge := judgeTiming(t)
	timing.Retry(t, 3, func(attempt int) []string {
		const n = 600
		// The machine's lateness meanwhile: a one-shot Waiter on the same
		// period, its due times half a period off Every's.
		var base []time.Duration
		baseOK := make(chan bool, 1)
		start := time.Now().Add(5*period + period/2)
		go func() {
			one := NewWaiter(nil).Spin(20 * time.Microsecond)
			defer one.Close()
			var ok bool
			base, ok = lateness(t, one, n, func(k int) time.Time { return start.Add(time.Duration(k) * period) }, nil)
			baseOK <- ok
		}()
		w := NewWaiter(nil).Spin(20 * time.Microsecond).Every(period)
		defer w.Close()
		began := time.Now().Add(5 * period)
		late, ok := lateness(t, w, n, func(k int) time.Time {
			return began.Add(time.Duration(float64(k) * 1.01 * float64(time.Second) / rate))
		}, func(k int, now time.Time) {
			if k%197 == 0 {
				for time.Since(now) < 3*period { // busy: ticks pile up
				}
			}
		})
		if !<-baseOK {
			return []string{"a one-shot waiter gave up with done open"}
		}
		if !ok {
			return []string{"gave up with done open"}
		}
		p50, p98 := late[len(late)/2], late[len(late)*98/100]
		b50 := base[len(base)/2]
		t.Logf("attempt %d: lateness p50 %v, p98 %v, max %v; a one-shot waiter's meanwhile p50 %v, p98 %v", attempt, p50, p98, late[len(late)-1], b50, base[len(base)*98/100])
		if judge && p50 > b50+period/16 {
			return []string{fmt.Sprintf("lateness p50 %v, want at most %v (a one-shot waiter's %v and a sixteenth of a period)", p50, b50+period/16, b50)}
		}
		return nil
	})
}

// A period shorter than MinTick ticks every MinTick: at 50,000 due times a
// second no wait returns early, and the median one ends within 1 ms of its
// due time: a tick (MinTick) plus the machine's wake-up lateness, which
// under CI's parallel packages reached 50-300 µs at the median, where a
// waiter that missed its ticks would hang. Timing-dependent: each
// attempt's figures are logged.
func TestWaiterEveryCoarse(t *testing.T) {
	period := 20 * time.Microsecond
	judge := judgeTiming(t)
	timing.Retry(t, 3, func(attempt int) []string {
		w := NewWaiter(nil).Every(period)
		defer w.Close()
		began := time.Now().Add(time.Millisecond)
		late, ok := lateness(t, w, 5000, func(k int) time.Time { return began.Add(time.Duration(k) * period) }, nil)
		if !ok {
			return []string{"gave up with done open"}
		}
		p50 := late[len(late)/2]
		t.Logf("attempt %d: lateness p50 %v, p90 %v, max %v", attempt, p50, late[len(late)*9/10], late[len(late)-1])
		if judge && p50 > time.Millisecond {
			return []string{fmt.Sprintf("lateness p50 %v, want at most 1ms", p50)}
		}
		return nil
	})
}

// lateness waits with w for n due times, due(k), and returns how late each
// wait ended, sorted; a wait that ends early is an error, one that gives up
// makes ok false. after, when set, runs after each wait.
func lateness(t *testing.T, w *Waiter, n int, due func(k int) time.Time, after func(k int, now time.Time)) (late []time.Duration, ok bool) {
	t.Helper()
	late = make([]time.Duration, 0, n)
	for k := range n {
		d := due(k)
		if !w.Until(d) {
			return nil, false
		}
		now := time.Now()
		if now.Before(d) {
			t.Errorf("call %d: returned %v early", k, d.Sub(now))
		}
		late = append(late, now.Sub(d))
		if after != nil {
			after(k, now)
		}
	}
	slices.Sort(late)
	return late, true
}
