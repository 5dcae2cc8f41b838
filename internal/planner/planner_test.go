package planner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// pod builds a pod from a compact description: "init:a", "sidecar:s",
// "main:m", "defer:d", in declaration order.
func pod(policy v1.RestartPolicy, names ...string) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
	p.Spec.RestartPolicy = policy
	always := v1.ContainerRestartPolicyAlways
	for _, n := range names {
		role, name, _ := strings.Cut(n, ":")
		c := v1.Container{Name: name, Image: "busybox"}
		switch role {
		case "init":
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		case "sidecar":
			c.RestartPolicy = &always
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		case "main":
			p.Spec.Containers = append(p.Spec.Containers, c)
		case "defer":
			p.Defer = append(p.Defer, c)
		default:
			panic("bad role " + role)
		}
	}
	return p
}

func running(since time.Duration) Observed {
	return Observed{State: Running, Started: true, StartedOnce: true, StartedAt: at(since)}
}

func exited(code int32, finished time.Duration) Observed {
	return Observed{State: Exited, StartedOnce: true, StartedAt: at(finished - time.Second), FinishedAt: at(finished), ExitCode: code}
}

func (o Observed) steps(n int) Observed                  { o.BackoffSteps = n; return o }
func (o Observed) stopping(since time.Duration) Observed { o.StopRequestedAt = at(since); return o }

// signalled: the stop sequence began and the stop signal went out then.
func (o Observed) signalled(since time.Duration) Observed {
	o.StopRequestedAt, o.SignalledAt = at(since), at(since)
	return o
}
func (o Observed) killed() Observed                 { o.Killed = true; return o }
func (o Observed) killAt(d time.Duration) Observed  { o.KillAt = at(d); return o }
func (o Observed) notStarted() Observed             { o.Started = false; o.StartedOnce = false; return o }
func (o Observed) ranFrom(d time.Duration) Observed { o.StartedAt = at(d); return o }

// describe renders a plan as short strings so that table rows stay readable.
func describe(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		s := a.Kind.String() + " " + a.Container.Name
		switch a.Kind {
		case Start:
			s += fmt.Sprintf(" steps=%d", a.BackoffSteps)
		case Stop:
			s += fmt.Sprintf(" preStop=%t killAt=%s reason=%s", a.PreStop, a.KillAt.Sub(t0), a.Reason)
		case Kill:
			s += " reason=" + a.Reason
		}
		out = append(out, s)
	}
	for _, b := range p.Backoffs {
		out = append(out, fmt.Sprintf("Backoff %s until=%s", b.Container.Name, b.Until.Sub(t0)))
	}
	if !p.WakeAt.IsZero() {
		out = append(out, fmt.Sprintf("WakeAt %s", p.WakeAt.Sub(t0)))
	}
	if p.Completed {
		out = append(out, "Completed")
	}
	if p.Done {
		out = append(out, "Done")
	}
	if len(p.DeferIncomplete) > 0 {
		out = append(out, "DeferIncomplete "+strings.Join(p.DeferIncomplete, ","))
	}
	return out
}

func testConfig() Config {
	c := DefaultConfig()
	return c
}

type obs = map[string]Observed

func TestNext(t *testing.T) {
	// term is a termination begun at 0 with a 60 s grace period.
	term := func(runDefer bool) *Termination {
		return &Termination{RequestedAt: t0, Deadline: at(60 * time.Second), RunDefer: runDefer}
	}
	cases := map[string]struct {
		pod  *model.Pod
		obs  obs
		term *Termination
		now  time.Duration
		want []string
	}{
		// Start rule 1: init containers one at a time, in order.
		"start: first init container starts alone": {
			pod:  pod("Always", "init:a", "init:b", "main:m"),
			want: []string{"Start a steps=0"},
		},
		"start: running init container blocks the next": {
			pod: pod("Always", "init:a", "init:b", "main:m"),
			obs: obs{"a": running(0)},
		},
		"start: next init container after exit 0": {
			pod:  pod("Always", "init:a", "init:b", "main:m"),
			obs:  obs{"a": exited(0, time.Second)},
			now:  time.Second,
			want: []string{"Start b steps=0"},
		},
		"start: failed init container with restartPolicy Never fails the pod": {
			pod:  pod("Never", "init:a", "init:b", "main:m"),
			obs:  obs{"a": exited(1, time.Second)},
			now:  time.Second,
			want: []string{"Completed"},
		},
		"start: failed init container restarts at once the first time": {
			pod:  pod("OnFailure", "init:a", "main:m"),
			obs:  obs{"a": exited(1, time.Second)},
			now:  time.Second,
			want: []string{"Start a steps=1"},
		},
		"start: failed init container waits out its backoff the second time": {
			pod:  pod("Always", "init:a", "main:m"),
			obs:  obs{"a": exited(1, time.Second).steps(1)},
			now:  2 * time.Second,
			want: []string{"Backoff a until=11s", "WakeAt 11s"},
		},
		"start: init container restarts when its backoff ends": {
			pod:  pod("Always", "init:a", "main:m"),
			obs:  obs{"a": exited(1, time.Second).steps(1)},
			now:  11 * time.Second,
			want: []string{"Start a steps=2"},
		},
		// Start rule 2: sidecars start in place and gate the next one.
		"start: sidecar starts in its place": {
			pod:  pod("Never", "init:a", "sidecar:s", "init:b", "main:m"),
			obs:  obs{"a": exited(0, time.Second)},
			now:  time.Second,
			want: []string{"Start s steps=0"},
		},
		"start: next init container waits until the sidecar has started": {
			pod: pod("Never", "sidecar:s", "init:b", "main:m"),
			obs: obs{"s": running(0).notStarted()},
		},
		"start: next init container starts once the sidecar has started": {
			pod:  pod("Never", "sidecar:s", "init:b", "main:m"),
			obs:  obs{"s": running(0)},
			want: []string{"Start b steps=0"},
		},
		"start: sidecar that exits restarts even with restartPolicy Never": {
			pod:  pod("Never", "sidecar:s", "main:m"),
			obs:  obs{"s": exited(0, 5*time.Second), "m": running(time.Second)},
			now:  5 * time.Second,
			want: []string{"Start s steps=1"},
		},
		"start: crashing sidecar backs off, later containers go on": {
			pod:  pod("Never", "sidecar:s", "init:b", "main:m"),
			obs:  obs{"s": exited(1, 5*time.Second).steps(2), "b": exited(0, 3*time.Second)},
			now:  6 * time.Second,
			want: []string{"Start m steps=0", "Backoff s until=25s", "WakeAt 25s"},
		},
		"start: a sidecar that never started blocks while it backs off": {
			pod:  pod("Never", "sidecar:s", "init:b", "main:m"),
			obs:  obs{"s": exited(1, 5*time.Second).notStarted().steps(1)},
			now:  6 * time.Second,
			want: []string{"Backoff s until=15s", "WakeAt 15s"},
		},
		// Start rule 3: regular containers together after all init containers.
		"start: regular containers start together": {
			pod:  pod("Always", "init:a", "sidecar:s", "main:m1", "main:m2"),
			obs:  obs{"a": exited(0, time.Second), "s": running(time.Second)},
			now:  2 * time.Second,
			want: []string{"Start m1 steps=0", "Start m2 steps=0"},
		},
		// Start rule 4: restarts by policy with crash-loop backoff.
		"restart: Always restarts a container that exited 0": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": exited(0, time.Second)},
			now:  time.Second,
			want: []string{"Start m steps=1"},
		},
		"restart: OnFailure restarts a failed container": {
			pod:  pod("OnFailure", "main:m", "main:n"),
			obs:  obs{"m": exited(2, time.Second), "n": running(0)},
			now:  time.Second,
			want: []string{"Start m steps=1"},
		},
		"restart: backoff doubles": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": exited(1, time.Second).steps(3)},
			now:  time.Second,
			want: []string{"Backoff m until=41s", "WakeAt 41s"},
		},
		"restart: backoff is capped at 5 minutes": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": exited(1, time.Second).steps(12)},
			now:  time.Second,
			want: []string{"Backoff m until=5m1s", "WakeAt 5m1s"},
		},
		"restart: backoff resets after 10 minutes of running": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": exited(1, 11*time.Minute).steps(6).ranFrom(0)},
			now:  11 * time.Minute,
			want: []string{"Start m steps=1"},
		},
		// Probes: a container stopped because a probe failed is killed at
		// its own kill time while the pod syncs.
		"probe: a container stopped for a failed probe is killed at its kill time": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).stopping(time.Second).killAt(6 * time.Second)},
			now:  6 * time.Second,
			want: []string{"Kill m reason=ProbeFailed"},
		},
		"probe: a termination does not put off a probe kill": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).stopping(time.Second).killAt(6 * time.Second)},
			term: &Termination{RequestedAt: at(2 * time.Second), Deadline: at(62 * time.Second)},
			now:  6 * time.Second,
			want: []string{"Kill m reason=Terminating", "WakeAt 1m2s"},
		},
		"probe: before its kill time the worker waits": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).stopping(time.Second).killAt(6 * time.Second)},
			now:  2 * time.Second,
			want: []string{"WakeAt 6s"},
		},
		// Start rule 5: completion by the regular containers only.
		"complete: OnFailure pod completes when all exited 0, sidecar still running": {
			pod:  pod("OnFailure", "sidecar:s", "main:m"),
			obs:  obs{"s": running(0), "m": exited(0, 5*time.Second)},
			now:  5 * time.Second,
			want: []string{"Completed"},
		},
		"complete: Never pod completes with a failed container": {
			pod:  pod("Never", "main:m", "main:n"),
			obs:  obs{"m": exited(0, 5*time.Second), "n": exited(3, 4*time.Second)},
			now:  5 * time.Second,
			want: []string{"Completed"},
		},
		"complete: not while one regular container still runs": {
			pod: pod("Never", "main:m", "main:n"),
			obs: obs{"m": exited(0, 5*time.Second), "n": running(0)},
			now: 5 * time.Second,
		},
		// Termination rule 2: killed before a regular container started.
		"terminate: kill during init stops the init container, starts nothing": {
			pod:  pod("Always", "sidecar:s", "init:a", "main:m", "defer:d"),
			obs:  obs{"s": running(0), "a": running(time.Second)},
			term: term(false),
			now:  2 * time.Second,
			want: []string{"Stop a preStop=false killAt=1m0s reason=Terminating", "WakeAt 1m0s"},
		},
		"terminate: kill during init stops the sidecar after the init container": {
			pod:  pod("Always", "sidecar:s", "init:a", "main:m", "defer:d"),
			obs:  obs{"s": running(0), "a": exited(143, 3*time.Second)},
			term: term(false),
			now:  3 * time.Second,
			want: []string{"Stop s preStop=true killAt=1m0s reason=Terminating", "WakeAt 1m0s"},
		},
		// Termination rule 3: defer containers in order, others keep running.
		"terminate: first defer container starts, nothing is stopped": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d1", "defer:d2"),
			obs:  obs{"s": running(0), "m": running(time.Second)},
			term: term(true),
			want: []string{"Start d1 steps=0", "WakeAt 1m0s"},
		},
		"terminate: running defer container blocks the next": {
			pod:  pod("Always", "main:m", "defer:d1", "defer:d2"),
			obs:  obs{"m": running(0), "d1": running(time.Second)},
			term: term(true),
			now:  2 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: next defer container after exit 0": {
			pod:  pod("Always", "main:m", "defer:d1", "defer:d2"),
			obs:  obs{"m": running(0), "d1": exited(0, 2*time.Second)},
			term: term(true),
			now:  2 * time.Second,
			want: []string{"Start d2 steps=0", "WakeAt 1m0s"},
		},
		"terminate: failed defer container is retried at once": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": running(0), "d1": exited(1, 2*time.Second)},
			term: term(true),
			now:  2 * time.Second,
			want: []string{"Start d1 steps=1", "WakeAt 1m0s"},
		},
		"terminate: failed defer container backs off": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": running(0), "d1": exited(1, 2*time.Second).steps(2)},
			term: term(true),
			now:  2 * time.Second,
			want: []string{"Backoff d1 until=22s", "WakeAt 22s"},
		},
		"terminate: a defer retry that would pass the deadline is given up; the rest stops gracefully": {
			pod:  pod("Always", "main:m", "defer:d1", "defer:d2"),
			obs:  obs{"m": running(0), "d1": exited(1, 50*time.Second).steps(2)},
			term: term(true),
			now:  50 * time.Second,
			want: []string{"Stop m preStop=false killAt=1m0s reason=Terminating", "WakeAt 1m0s", "DeferIncomplete d1,d2"},
		},
		"terminate: a main container that exits during defer is not restarted": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": exited(0, 3*time.Second), "d1": running(time.Second)},
			term: term(true),
			now:  3 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: sidecar that dies during defer comes back within a second": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d1"),
			obs:  obs{"s": exited(1, 3*time.Second).steps(4), "m": running(0), "d1": running(time.Second)},
			term: term(true),
			now:  3 * time.Second,
			want: []string{"Backoff s until=4s", "WakeAt 4s"},
		},
		// Termination rule 4: regular containers after the defer containers.
		"terminate: after defer, regular containers stop promptly without preStop": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d1"),
			obs:  obs{"s": running(0), "m": running(0), "d1": exited(0, 4*time.Second)},
			term: term(true),
			now:  4 * time.Second,
			want: []string{"Stop m preStop=false killAt=1m0s reason=DeferContainersCompleted", "WakeAt 1m0s"},
		},
		"terminate: prompt kill 2 s after the stop signal": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": running(0).signalled(4 * time.Second), "d1": exited(0, 4*time.Second)},
			term: term(true),
			now:  6 * time.Second,
			want: []string{"Kill m reason=DeferContainersCompleted", "WakeAt 1m0s"},
		},
		"terminate: prompt kill waits its 2 s": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": running(0).signalled(4 * time.Second), "d1": exited(0, 4*time.Second)},
			term: term(true),
			now:  5 * time.Second,
			want: []string{"WakeAt 6s"},
		},
		"terminate: prompt kill never after the deadline": {
			pod:  pod("Always", "main:m", "defer:d1"),
			obs:  obs{"m": running(0).signalled(59 * time.Second), "d1": exited(0, 59*time.Second)},
			term: term(true),
			now:  59 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: a sidecar's preStop in a prompt stop is bounded by the deadline, not the 2 s": {
			pod:  pod("Always", "sidecar:s1", "main:m", "defer:d"),
			obs:  obs{"s1": running(0).stopping(5 * time.Second), "m": exited(143, 5*time.Second), "d": exited(0, 4*time.Second)},
			term: term(true),
			now:  30 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: without defer containers, preStop then signal, kill at the deadline": {
			pod:  pod("Always", "sidecar:s", "main:m1", "main:m2"),
			obs:  obs{"s": running(0), "m1": running(0), "m2": running(0)},
			term: term(false),
			want: []string{
				"Stop m1 preStop=true killAt=1m0s reason=Terminating",
				"Stop m2 preStop=true killAt=1m0s reason=Terminating",
				"WakeAt 1m0s",
			},
		},
		"terminate: stopping container is left alone until the deadline": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).stopping(0)},
			term: term(false),
			now:  30 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		// Termination rule 5: sidecars last, one at a time, in reverse.
		"terminate: sidecars stop after the regular containers, last declared first": {
			pod:  pod("Always", "sidecar:s1", "sidecar:s2", "main:m"),
			obs:  obs{"s1": running(0), "s2": running(0), "m": exited(143, 5*time.Second)},
			term: term(false),
			now:  5 * time.Second,
			want: []string{"Stop s2 preStop=true killAt=1m0s reason=Terminating", "WakeAt 1m0s"},
		},
		"terminate: a sidecar stops only once the one declared after it exited": {
			pod:  pod("Always", "sidecar:s1", "sidecar:s2", "main:m"),
			obs:  obs{"s1": running(0), "s2": running(0).stopping(5 * time.Second), "m": exited(143, 5*time.Second)},
			term: term(false),
			now:  6 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: the earlier sidecar stops next": {
			pod:  pod("Always", "sidecar:s1", "sidecar:s2", "main:m"),
			obs:  obs{"s1": running(0), "s2": exited(143, 6*time.Second), "m": exited(143, 5*time.Second)},
			term: term(false),
			now:  6 * time.Second,
			want: []string{"Stop s1 preStop=true killAt=1m0s reason=Terminating", "WakeAt 1m0s"},
		},
		"terminate: sidecars stop promptly after defer containers, keeping preStop": {
			pod:  pod("Always", "sidecar:s1", "main:m", "defer:d"),
			obs:  obs{"s1": running(0), "m": exited(143, 5*time.Second), "d": exited(0, 4*time.Second)},
			term: term(true),
			now:  5 * time.Second,
			want: []string{"Stop s1 preStop=true killAt=1m0s reason=DeferContainersCompleted", "WakeAt 1m0s"},
		},
		"terminate: a sidecar that dies while an init container is stopped is not restarted": {
			pod:  pod("Always", "sidecar:s1", "init:a", "main:m", "defer:d"),
			obs:  obs{"s1": exited(1, 5*time.Second), "a": running(time.Second).stopping(4 * time.Second)},
			term: term(false),
			now:  5 * time.Second,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: a sidecar restart never passes the deadline": {
			pod:  pod("Always", "sidecar:s1", "main:m", "defer:d"),
			obs:  obs{"s1": exited(1, 59500*time.Millisecond).steps(1), "m": running(0), "d": running(50 * time.Second)},
			term: term(true),
			now:  59500 * time.Millisecond,
			want: []string{"WakeAt 1m0s"},
		},
		"terminate: a sidecar that dies while regular containers stop is restarted": {
			pod:  pod("Always", "sidecar:s1", "main:m"),
			obs:  obs{"s1": exited(1, 5*time.Second), "m": running(0).stopping(4 * time.Second)},
			term: term(false),
			now:  5 * time.Second,
			want: []string{"Start s1 steps=1", "WakeAt 1m0s"},
		},
		// Termination rule 6: the deadline.
		"terminate: at the deadline everything still running is killed": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d1", "defer:d2"),
			obs:  obs{"s": running(0), "m": running(0), "d1": running(time.Second)},
			term: term(true),
			now:  60 * time.Second,
			want: []string{
				"Kill s reason=GracePeriodExceeded",
				"Kill m reason=GracePeriodExceeded",
				"Kill d1 reason=GracePeriodExceeded",
				"DeferIncomplete d1,d2",
			},
		},
		"terminate: a killed container is not killed twice": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).killed()},
			term: term(false),
			now:  61 * time.Second,
		},
		// Termination rule 7: terminated as soon as everything exited.
		"terminate: done when nothing runs": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d"),
			obs:  obs{"s": exited(143, 6*time.Second), "m": exited(143, 5*time.Second), "d": exited(0, 4*time.Second)},
			term: term(true),
			now:  6 * time.Second,
			want: []string{"Done"},
		},
		"terminate: done at once when nothing ever started": {
			pod:  pod("Always", "init:a", "main:m", "defer:d"),
			term: term(false),
			want: []string{"Done"},
		},
		// Termination rule 8 and shortening: deadline already now.
		"terminate: grace period 0 kills everything at once": {
			pod:  pod("Always", "sidecar:s", "main:m", "defer:d"),
			obs:  obs{"s": running(0), "m": running(0)},
			term: &Termination{RequestedAt: at(5 * time.Second), Deadline: at(5 * time.Second)},
			now:  5 * time.Second,
			want: []string{"Kill s reason=GracePeriodExceeded", "Kill m reason=GracePeriodExceeded"},
		},
		"terminate: a shortened deadline brings the kill forward": {
			pod:  pod("Always", "main:m"),
			obs:  obs{"m": running(0).stopping(0)},
			term: &Termination{RequestedAt: t0, Deadline: at(10 * time.Second)},
			now:  10 * time.Second,
			want: []string{"Kill m reason=GracePeriodExceeded"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := describe(Next(Input{Pod: tc.pod, Containers: tc.obs, Termination: tc.term, Now: at(tc.now), Config: testConfig()}))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	c := DefaultConfig()
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for steps, w := range want {
		if got := c.Delay(steps); got != w {
			t.Errorf("Delay(%d) = %s, want %s", steps, got, w)
		}
	}
	c.BackoffBase = 100 * time.Millisecond
	if got := c.Delay(3); got != 400*time.Millisecond {
		t.Errorf("configurable base: Delay(3) = %s, want 400ms", got)
	}
}

func TestBegin(t *testing.T) {
	p := pod("Always", "init:a", "main:m", "defer:d")
	cases := map[string]struct {
		pod       *model.Pod
		obs       obs
		grace     time.Duration
		wantDefer bool
	}{
		"defer runs once a regular container started":       {pod: p, obs: obs{"a": exited(0, 0), "m": running(0)}, grace: time.Minute, wantDefer: true},
		"defer runs after the regular containers completed": {pod: p, obs: obs{"a": exited(0, 0), "m": exited(0, time.Second)}, grace: time.Minute, wantDefer: true},
		"no defer when killed during init":                  {pod: p, obs: obs{"a": running(0)}, grace: time.Minute},
		"no defer with grace period 0":                      {pod: p, obs: obs{"a": exited(0, 0), "m": running(0)}},
		"no defer without defer containers":                 {pod: pod("Always", "main:m"), obs: obs{"m": running(0)}, grace: time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Begin(tc.pod, tc.obs, at(time.Second), tc.grace)
			if got.RunDefer != tc.wantDefer || !got.Deadline.Equal(at(time.Second+tc.grace)) || !got.RequestedAt.Equal(at(time.Second)) {
				t.Errorf("Begin = %+v, want RunDefer=%t deadline %s", got, tc.wantDefer, time.Second+tc.grace)
			}
		})
	}
}

func TestShortenNeverLengthens(t *testing.T) {
	term := Termination{RequestedAt: t0, Deadline: at(30 * time.Second)}
	if term.Shorten(at(10*time.Second), time.Minute) || !term.Deadline.Equal(at(30*time.Second)) {
		t.Fatalf("a longer grace period moved the deadline to %s", term.Deadline.Sub(t0))
	}
	if !term.Shorten(at(10*time.Second), 5*time.Second) || !term.Deadline.Equal(at(15*time.Second)) {
		t.Fatalf("a shorter grace period did not move the deadline: %s", term.Deadline.Sub(t0))
	}
}

func TestPhase(t *testing.T) {
	cases := map[string]struct {
		pod        *model.Pod
		obs        obs
		terminated bool
		want       v1.PodPhase
	}{
		"pending during init":                         {pod: pod("Always", "init:a", "main:m"), obs: obs{"a": running(0)}, want: v1.PodPending},
		"running once a regular container started":    {pod: pod("Always", "main:m", "main:n"), obs: obs{"m": running(0)}, want: v1.PodRunning},
		"failed init with Never":                      {pod: pod("Never", "init:a", "main:m"), obs: obs{"a": exited(1, 0)}, want: v1.PodFailed},
		"failed init with OnFailure is still pending": {pod: pod("OnFailure", "init:a", "main:m"), obs: obs{"a": exited(1, 0)}, want: v1.PodPending},
		"succeeded, sidecar ignored":                  {pod: pod("OnFailure", "sidecar:s", "main:m"), obs: obs{"s": exited(137, 0), "m": exited(0, 0)}, want: v1.PodSucceeded},
		"failed with Never":                           {pod: pod("Never", "main:m", "main:n"), obs: obs{"m": exited(0, 0), "n": exited(1, 0)}, want: v1.PodFailed},
		"running while Always restarts":               {pod: pod("Always", "main:m"), obs: obs{"m": exited(0, 0)}, want: v1.PodRunning},
		"terminated after SIGTERM is failed":          {pod: pod("Always", "main:m"), obs: obs{"m": exited(143, 0)}, terminated: true, want: v1.PodFailed},
		"terminated with exit 0 is succeeded":         {pod: pod("Always", "main:m"), obs: obs{"m": exited(0, 0)}, terminated: true, want: v1.PodSucceeded},
		"terminated before start is failed":           {pod: pod("Always", "init:a", "main:m"), obs: obs{"a": exited(143, 0)}, terminated: true, want: v1.PodFailed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Phase(tc.pod, tc.obs, tc.terminated); got != tc.want {
				t.Errorf("Phase = %s, want %s", got, tc.want)
			}
		})
	}
}
