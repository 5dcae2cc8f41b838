package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/crilog"
)

// timestampFormat prefixes each line with timestamps=true: the kubelet's
// RFC3339NanoFixed, RFC 3339 with nine digits of fraction always, so that
// the lines' text lines up. The time keeps the zone of the log record.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// logOptions are the query parameters of a container log request, the
// kubelet's v1.PodLogOptions.
type logOptions struct {
	follow, previous, timestamps bool
	// tail is the number of last lines, crilog.AllLines for all.
	tail int
	// limit is the most bytes sent, 0 for no limit.
	limit int64
	// since drops the lines written before it (zero: none).
	since time.Time
	// stream is crilog.Stdout, crilog.Stderr or "" for both.
	stream string
}

// badParams is an invalid request: 400 when the query cannot be decoded,
// 422 when its values are not valid together (the kubelet's codes).
type badParams struct {
	code int
	msg  string
}

func (e *badParams) Error() string { return e.msg }

// parseLogOptions decodes the query the API server sends for a pod's log
// (see LogLocation in kubernetes' pkg/registry/core/pod/strategy.go):
// follow, previous, timestamps, tailLines (or the older tail, "all" for
// every line), limitBytes, sinceSeconds or sinceTime (RFC 3339), stream
// (All, Stdout or Stderr). sinceSeconds counts back from now.
func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	opts := logOptions{tail: crilog.AllLines}
	undecodable := &badParams{code: http.StatusBadRequest, msg: `{"message": "Unable to decode query."}`}
	if tail := q.Get("tail"); tail != "" && !q.Has("tailLines") {
		if tail != "all" {
			q.Set("tailLines", tail)
		}
	}
	for name, dst := range map[string]*bool{"follow": &opts.follow, "previous": &opts.previous, "timestamps": &opts.timestamps} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return opts, undecodable
			}
			*dst = b
		}
	}
	ints := map[string]*int64{}
	for _, name := range []string{"tailLines", "limitBytes", "sinceSeconds"} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return opts, undecodable
			}
			ints[name] = &n
		}
	}
	var sinceTime *time.Time
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return opts, undecodable
		}
		sinceTime = &t
	}

	var problems []string
	if n := ints["tailLines"]; n != nil {
		if *n < 0 {
			problems = append(problems, "tailLines: must be greater than or equal to 0")
		}
		opts.tail = int(min(*n, math.MaxInt))
	}
	if n := ints["limitBytes"]; n != nil {
		if *n < 1 {
			problems = append(problems, "limitBytes: must be greater than 0")
		}
		opts.limit = *n
	}
	switch n := ints["sinceSeconds"]; {
	case n != nil && sinceTime != nil:
		problems = append(problems, "at most one of `sinceTime` or `sinceSeconds` may be specified")
	case n != nil && *n < 1:
		problems = append(problems, "sinceSeconds: must be greater than 0")
	case n != nil:
		opts.since = now.Add(-time.Duration(*n) * time.Second)
	case sinceTime != nil:
		opts.since = *sinceTime
	}
	if len(problems) > 0 {
		return opts, &badParams{code: http.StatusUnprocessableEntity, msg: "invalid request: " + strings.Join(problems, "; ")}
	}

	switch s := q.Get("stream"); s {
	case "", v1.LogStreamAll:
	case v1.LogStreamStdout:
		opts.stream = crilog.Stdout
	case v1.LogStreamStderr:
		opts.stream = crilog.Stderr
	default:
		return opts, &badParams{code: http.StatusBadRequest, msg: fmt.Sprintf("invalid stream type %q", s)}
	}
	return opts, nil
}

// containerLogs serves GET /containerLogs/{ns}/{pod}/{container}: the lines
// of one container instance as text/plain, as the kubelet does.
//
// With follow, the lines written later are sent as they come, until the
// instance has ended and all it wrote was sent (when the LogSource
// implements LogEnds), the client goes away, limitBytes is reached or the
// server stops. follow with previous reads the previous instance, which
// has ended, to its end.
//
// A line split in partial records by the runtime is sent as one line, with
// one timestamp when timestamps is set (the kubelet gives each piece its
// own), but piece by piece as it is read, as the kubelet does: the node
// never holds a line whole, whatever its length. sinceSeconds and
// sinceTime keep or drop a line whole, by the time of its first record.
func (s *KubeletServer) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	log := s.log.With("pod", ns+"/"+name, "container", container, "user", clientUser(r))
	refuse := func(code int, msg string) {
		lvl := slog.LevelInfo
		if code >= http.StatusInternalServerError {
			lvl = slog.LevelError
		}
		log.Log(r.Context(), lvl, "container log refused", "code", code, "message", msg)
		http.Error(w, msg, code)
	}
	switch {
	case name == "":
		refuse(http.StatusBadRequest, `{"message": "Missing podID."}`)
		return
	case container == "":
		refuse(http.StatusBadRequest, `{"message": "Missing container name."}`)
		return
	case ns == "":
		refuse(http.StatusBadRequest, `{"message": "Missing podNamespace."}`)
		return
	}
	opts, err := parseLogOptions(r.URL.Query(), s.cfg.Clock.Now())
	if err != nil {
		code := http.StatusBadRequest
		if bp := (*badParams)(nil); errors.As(err, &bp) {
			code = bp.code
		}
		refuse(code, err.Error())
		return
	}

	path, code, msg := s.logFile(ns, name, container, opts.previous)
	if code != 0 {
		refuse(code, msg)
		return
	}

	ctx := r.Context()
	follow := opts.follow && !opts.previous
	var until <-chan struct{}
	if le, ok := s.cfg.Logs.(LogEnds); ok && follow {
		until = le.LogEnded(ctx, ns, name, container, path)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	lw := &logWriter{w: w, rc: http.NewResponseController(w), opts: opts, flush: follow}
	if follow {
		// The client gets the headers now, not with the first line.
		if err := lw.rc.Flush(); err != nil {
			return
		}
	}
	err = crilog.ReadLog(ctx, path, crilog.ReadOptions{Follow: follow, Tail: opts.tail, Stream: opts.stream, Until: until}, lw.line)
	switch {
	case err == nil, errors.Is(err, errLimitReached):
	case ctx.Err() != nil:
		// The client left, or the server stops.
		log.Debug("container log stream ended", "err", err)
	default:
		// Mid-stream: the status line is gone already.
		log.Warn("container log stream failed", "err", err)
	}
}

// logFile is the path of the log of container of pod ns/name (its
// previous instance's with previous), or the status code and message of
// the kubelet's refusal when there is none.
func (s *KubeletServer) logFile(ns, name, container string, previous bool) (path string, code int, msg string) {
	path, err := s.cfg.Logs.LogPath(ns, name, container, previous)
	var bad *agent.BadRequestError
	switch {
	case errors.Is(err, agent.ErrNotFound):
		return "", http.StatusNotFound, fmt.Sprintf("pod %q does not exist", name)
	case errors.As(err, &bad):
		return "", http.StatusBadRequest, bad.Message
	case err != nil:
		return "", http.StatusInternalServerError, fmt.Sprintf("log of container %q in pod %q: %v", container, name, err)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if previous {
			return "", http.StatusBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name)
		}
		return "", http.StatusBadRequest, fmt.Sprintf("container %q in pod %q has no log yet", container, name)
	} else if err != nil {
		return "", http.StatusInternalServerError, fmt.Sprintf("log of container %q in pod %q: %v", container, name, err)
	}
	return path, 0, ""
}

// errLimitReached ends the reading once limitBytes were sent.
var errLimitReached = errors.New("limitBytes reached")

// logWriter writes log lines, and pieces of lines, to the response.
type logWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	opts  logOptions
	flush bool
	sent  int64
	buf   []byte
}

func (lw *logWriter) line(l crilog.Line) error {
	if !lw.opts.since.IsZero() && l.Time.Before(lw.opts.since) {
		return nil
	}
	lw.buf = lw.buf[:0]
	if lw.opts.timestamps && !l.Continued {
		lw.buf = l.Time.AppendFormat(lw.buf, timestampFormat)
		lw.buf = append(lw.buf, ' ')
	}
	lw.buf = append(lw.buf, l.Content...)
	if !l.Partial {
		lw.buf = append(lw.buf, '\n')
	}
	limited := false
	if lw.opts.limit > 0 && lw.sent+int64(len(lw.buf)) >= lw.opts.limit {
		lw.buf = lw.buf[:lw.opts.limit-lw.sent]
		limited = true
	}
	n, err := lw.w.Write(lw.buf)
	lw.sent += int64(n)
	if err != nil {
		return err
	}
	if lw.flush || limited {
		if err := lw.rc.Flush(); err != nil {
			return err
		}
	}
	if limited {
		return errLimitReached
	}
	return nil
}
