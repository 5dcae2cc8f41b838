package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/crilog"
)

// fakeReviewer is the API server's TokenReviews: it accepts the tokens of
// good, counts the reviews and those in flight, and, while hold is set,
// keeps each review until release is closed (or its context ends).
type fakeReviewer struct {
	good    map[string]string // token → user
	started chan string       // each review's token, as it starts (the first 1000 unread)

	mu                  sync.Mutex
	hold                bool
	release             chan struct{}
	inFlight, maxFlight int
	reviews             int
}

var _ authenticationclient.TokenReviewInterface = (*fakeReviewer)(nil)

func newFakeReviewer(hold bool) *fakeReviewer {
	return &fakeReviewer{good: map[string]string{}, started: make(chan string, 1000), hold: hold, release: make(chan struct{})}
}

func (f *fakeReviewer) Create(ctx context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.mu.Lock()
	f.reviews++
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	hold, release := f.hold, f.release
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	select {
	case f.started <- tr.Spec.Token:
	default: // nobody waits for that many
	}
	if hold {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := tr.DeepCopy()
	if user, ok := f.good[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
	}
	return out, nil
}

// unhold lets every review held, and every later one, answer at once.
func (f *fakeReviewer) unhold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold {
		f.hold = false
		close(f.release)
	}
}

// counts are the reviews asked so far and the most that were in flight.
func (f *fakeReviewer) counts() (reviews, maxFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reviews, f.maxFlight
}

// waitStarted waits for n reviews to start.
func (f *fakeReviewer) waitStarted(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(eventTimeout)
	for range n {
		select {
		case <-f.started:
		case <-deadline:
			t.Fatal("a token review did not start")
		}
	}
}

// authResult is what authenticate returned.
type authResult struct {
	user *kubeletUser
	err  error
}

// authenticateAsync authenticates token in a goroutine.
func authenticateAsync(a *tokenAuthenticator, token string) <-chan authResult {
	ch := make(chan authResult, 1)
	go func() {
		u, err := a.authenticate(context.Background(), token)
		ch <- authResult{u, err}
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan authResult) authResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(eventTimeout):
		t.Fatal("authenticate did not return")
		return authResult{}
	}
}

// timerClock is a fake clock that tells timers when one is made: the slot
// wait has started.
type timerClock struct {
	*clocktesting.FakeClock
	timers chan time.Duration
}

func newTimerClock(t0 time.Time) timerClock {
	return timerClock{clocktesting.NewFakeClock(t0), make(chan time.Duration, 100)}
}

func (c timerClock) NewTimer(d time.Duration) clock.Timer {
	tm := c.FakeClock.NewTimer(d)
	c.timers <- d
	return tm
}

// waitTimer waits until a timer of d is made.
func (c timerClock) waitTimer(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case got := <-c.timers:
		if got != d {
			t.Fatalf("a timer of %v, want %v", got, d)
		}
	case <-time.After(eventTimeout):
		t.Fatal("no timer was made")
	}
}

// TestTokenFloodIsBounded: a flood of distinct made-up tokens never has
// more than the cap of TokenReviews in flight at once; each is still
// reviewed once a slot frees within the wait.
func TestTokenFloodIsBounded(t *testing.T) {
	api := newFakeReviewer(true)
	a := newTokenAuthenticator(api, clocktesting.NewFakeClock(logT0))
	const flood = 3 * maxTokenReviews
	results := make([]<-chan authResult, flood)
	for i := range results {
		results[i] = authenticateAsync(a, fmt.Sprintf("made-up-%d", i))
	}
	api.waitStarted(t, maxTokenReviews)
	if reviews, _ := api.counts(); reviews != maxTokenReviews {
		t.Errorf("%d reviews asked while %d are held, want the cap", reviews, maxTokenReviews)
	}
	api.unhold()
	for _, ch := range results {
		if r := waitResult(t, ch); r.user != nil || r.err != nil {
			t.Errorf("made-up token: %+v, %v", r.user, r.err)
		}
	}
	if reviews, maxFlight := api.counts(); reviews != flood || maxFlight != maxTokenReviews {
		t.Errorf("%d reviews, at most %d in flight; want %d, at most %d", reviews, maxFlight, flood, maxTokenReviews)
	}
}

// TestTokenReviewSlotWait: a token that finds every slot taken for longer
// than the wait is not reviewed (errTooManyReviews), and a token known
// already is answered meanwhile.
func TestTokenReviewSlotWait(t *testing.T) {
	api := newFakeReviewer(false)
	api.good["good"] = "reader"
	clk := newTimerClock(logT0)
	a := newTokenAuthenticator(api, clk)
	if u, err := a.authenticate(t.Context(), "good"); err != nil || u == nil || u.name != "reader" {
		t.Fatalf("good token: %+v, %v", u, err)
	}
	api.waitStarted(t, 1)
	api.mu.Lock()
	api.hold = true
	api.mu.Unlock()
	defer api.unhold()

	held := make([]<-chan authResult, maxTokenReviews)
	for i := range held {
		held[i] = authenticateAsync(a, fmt.Sprintf("slow-%d", i))
	}
	api.waitStarted(t, maxTokenReviews)
	waiting := authenticateAsync(a, "one-too-many")
	clk.waitTimer(t, tokenReviewSlotWait)

	// The good token does not wait for a slot.
	if u, err := a.authenticate(t.Context(), "good"); err != nil || u == nil || u.name != "reader" {
		t.Errorf("good token while the slots are taken: %+v, %v", u, err)
	}
	clk.Step(tokenReviewSlotWait)
	if r := waitResult(t, waiting); r.user != nil || !errors.Is(r.err, errTooManyReviews) {
		t.Errorf("a token past the wait: %+v, %v; want errTooManyReviews", r.user, r.err)
	}
	if reviews, _ := api.counts(); reviews != 1+maxTokenReviews {
		t.Errorf("%d reviews, want %d: the token past the wait is not reviewed", reviews, 1+maxTokenReviews)
	}
	api.unhold()
	for _, ch := range held {
		waitResult(t, ch)
	}
}

// TestTokenCacheLifetimes: an accepted token is answered from the cache
// for 2 minutes, a refused one for 30 s (on the injected clock); then
// each is reviewed again.
func TestTokenCacheLifetimes(t *testing.T) {
	api := newFakeReviewer(false)
	api.good["good"] = "reader"
	clk := clocktesting.NewFakeClock(logT0)
	a := newTokenAuthenticator(api, clk)
	ask := func(step time.Duration, token string, wantReviews int) {
		t.Helper()
		clk.Step(step)
		u, err := a.authenticate(t.Context(), token)
		if err != nil || (u != nil) != (token == "good") {
			t.Errorf("%s: %+v, %v", token, u, err)
		}
		if reviews, _ := api.counts(); reviews != wantReviews {
			t.Errorf("after %s: %d reviews, want %d", token, reviews, wantReviews)
		}
	}
	ask(0, "good", 1)
	ask(0, "forged", 2)
	ask(refusedTokenCacheTTL-time.Second, "forged", 2)
	ask(0, "good", 2)
	ask(time.Second+time.Nanosecond, "forged", 3) // refused over 30 s ago: asked again
	ask(tokenCacheTTL-refusedTokenCacheTTL-2*time.Second, "good", 3)
	ask(2*time.Second, "good", 4) // accepted over 2 min ago: asked again
}

// TestRefusedTokensDoNotEvictAccepted: more made-up tokens than the
// refused cache holds leave the accepted tokens cached.
func TestRefusedTokensDoNotEvictAccepted(t *testing.T) {
	api := newFakeReviewer(false)
	api.good["good"] = "reader"
	a := newTokenAuthenticator(api, clocktesting.NewFakeClock(logT0))
	if u, err := a.authenticate(t.Context(), "good"); err != nil || u == nil {
		t.Fatalf("good token: %+v, %v", u, err)
	}
	for i := range max(tokenCacheSize, refusedTokenCacheSize) + 1 {
		if u, err := a.authenticate(t.Context(), fmt.Sprintf("made-up-%d", i)); err != nil || u != nil {
			t.Fatalf("made-up token: %+v, %v", u, err)
		}
	}
	before, _ := api.counts()
	if u, err := a.authenticate(t.Context(), "good"); err != nil || u == nil {
		t.Fatalf("good token after the flood: %+v, %v", u, err)
	}
	if after, _ := api.counts(); after != before {
		t.Errorf("the good token was reviewed again after the flood")
	}
}

// TestKubeletServerTokenFlood: while made-up tokens hold every review
// slot, a known token is served, and a new one waits at most the slot
// wait before a 429 (audited as throttled).
func TestKubeletServerTokenFlood(t *testing.T) {
	api := newFakeReviewer(false)
	api.good["good"] = "system:serviceaccount:monitoring:reader"
	clk := newTimerClock(logT0.Add(time.Minute))
	f, sar, audit := webhookServer(t, func(c *KubeletServerConfig) {
		c.TokenReviews = api
		c.Clock = clk
	})
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "secret", false})
	sar.allow("system:serviceaccount:monitoring:reader", "proxy")
	url := f.url + "/containerLogs/default/web/app"
	c := f.client(t)
	if code, body := bearerGet(t, c, url, "good"); code != 200 || body != "secret\n" {
		t.Fatalf("good token: %d %q", code, body)
	}
	api.waitStarted(t, 1)
	api.mu.Lock()
	api.hold = true
	api.mu.Unlock()
	defer api.unhold()

	var wg sync.WaitGroup
	for i := range maxTokenReviews {
		flooder := f.client(t)
		wg.Go(func() { tryGet(t.Context(), flooder, url, fmt.Sprintf("made-up-%d", i)) })
	}
	api.waitStarted(t, maxTokenReviews)
	if code, body := bearerGet(t, c, url, "good"); code != 200 || body != "secret\n" {
		t.Errorf("good token during the flood: %d %q", code, body)
	}
	throttled := make(chan *http.Response, 1)
	tooMany := f.client(t)
	go func() { throttled <- tryGet(t.Context(), tooMany, url, "one-too-many") }()
	clk.waitTimer(t, tokenReviewSlotWait)
	clk.Step(tokenReviewSlotWait)
	select {
	case resp := <-throttled:
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("one token too many: %+v; want 429, Retry-After 1", resp)
		}
	case <-time.After(eventTimeout):
		t.Fatal("no answer past the slot wait")
	}
	api.unhold()
	wg.Wait()
	var sawThrottled bool
	for _, line := range audit.take(t) {
		sawThrottled = sawThrottled || strings.HasSuffix(line, "decision="+decisionThrottled)
	}
	if !sawThrottled {
		t.Error("no audit line of the throttled request")
	}
}

// tryGet is a GET of url with the bearer token, from any goroutine: its
// response with the body read and closed, nil if it failed.
func tryGet(ctx context.Context, c *http.Client, url, token string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
