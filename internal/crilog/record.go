package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Streams a record can belong to.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxRecordSize is the most content one record carries. A longer line is
// split into partial records of exactly this size and a last full record.
const MaxRecordSize = 16 * 1024

// Tags of a record: F ends a line, P is a piece of a longer one.
const (
	tagFull    = "F"
	tagPartial = "P"
)

// ErrMalformed is wrapped by every error about a line that is not a CRI log
// record.
var ErrMalformed = errors.New("malformed CRI log record")

// Record is one line of a CRI log file.
type Record struct {
	Time   time.Time
	Stream string // Stdout or Stderr
	// Partial is true for a P record: the line goes on in the next record
	// of the same stream.
	Partial bool
	// Content is the record's text without the trailing newline. Records
	// returned by Parse share it with the parsed line.
	Content []byte
}

// AppendRecord appends r in the CRI log format, newline included, to b and
// returns the extended buffer. r.Content must not contain a newline.
func AppendRecord(b []byte, r Record) []byte {
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, r.Stream...)
	if r.Partial {
		b = append(b, " "+tagPartial+" "...)
	} else {
		b = append(b, " "+tagFull+" "...)
	}
	b = append(b, r.Content...)
	return append(b, '\n')
}

// Parse decodes one record. line may end with its newline. The returned
// Content aliases line. An error wraps ErrMalformed.
//
// The tag field may carry further ':'-separated tags after the first one, as
// the format allows; only the first (F or P) is looked at.
func Parse(line []byte) (Record, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	var r Record

	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, fmt.Errorf("%w: no stream after the timestamp", ErrMalformed)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, fmt.Errorf("%w: timestamp: %v", ErrMalformed, err)
	}
	r.Time = t

	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, fmt.Errorf("%w: no tag after the stream", ErrMalformed)
	}
	switch string(stream) {
	case Stdout:
		r.Stream = Stdout
	case Stderr:
		r.Stream = Stderr
	default:
		return r, fmt.Errorf("%w: unknown stream %q", ErrMalformed, stream)
	}

	// An empty line may be written without the space after the tag.
	tags, content, _ := bytes.Cut(rest, []byte{' '})
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(tag) {
	case tagFull:
	case tagPartial:
		r.Partial = true
	default:
		return r, fmt.Errorf("%w: unknown tag %q", ErrMalformed, tags)
	}
	r.Content = content
	return r, nil
}
