// Package plannertest reads scenario files: the lifecycle rules written as
// data, in the manner of etcd-io/raft's testdata/*.txt. The planner's tests
// run internal/planner/testdata/*.txt through it; the pod worker's driver
// runs its scripts, internal/podworker/testdata/*.txt, through the same
// reader and reuses the pod and time notation of parse.go. The format is
// described in internal/planner/testdata/README.md.
//
// A file is a sequence of chunks separated by blank lines. A chunk with a
// "----" line is a block: comment lines ("# ...", the first one names the
// block), directive lines ("cmd key=value word ..."), "----", then the
// output the directives are expected to produce. A chunk without "----" is
// prose and must be all comments. The driver decides what the directives
// mean and whether state carries from block to block.
//
// Run with -rewrite (go test ./internal/planner -rewrite, or
// ./internal/podworker) to write what the code produces in place of the
// expected output of every block; review the diff before committing it.
// The flag is defined here, once, for every package whose tests import
// this one.
//
// Only tests import this package.
package plannertest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scenario files from what the code produces")

// separator ends a block's directives; its expected output follows.
const separator = "----"

// Arg is one word of a directive: "key=value", or a bare word (Val empty,
// HasVal false).
type Arg struct {
	Key, Val string
	HasVal   bool
}

// Directive is one line of a block: a command and its arguments.
type Directive struct {
	Cmd  string
	Args []Arg
	// Pos is "file:line", for messages.
	Pos string
}

// Errorf is an error that names the directive's position.
func (d Directive) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", d.Pos, d.Cmd, fmt.Sprintf(format, args...))
}

// Get is the value of key=value, and whether the directive has it.
func (d Directive) Get(key string) (string, bool) {
	for _, a := range d.Args {
		if a.HasVal && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// Has says whether the directive has key, bare or with a value.
func (d Directive) Has(key string) bool {
	for _, a := range d.Args {
		if a.Key == key {
			return true
		}
	}
	return false
}

// ParseDirective reads one directive line, "cmd key=value word ..."; pos
// is its position, for messages.
func ParseDirective(pos, line string) Directive {
	words := strings.Fields(line)
	if len(words) == 0 {
		return Directive{Pos: pos}
	}
	d := Directive{Cmd: words[0], Pos: pos}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		d.Args = append(d.Args, Arg{Key: k, Val: v, HasVal: ok})
	}
	return d
}

// Block is one scenario of a file.
type Block struct {
	// Name is the first comment line without its "# "; "line N" when the
	// block has no comment.
	Name       string
	Directives []Directive
	// Want is the expected output: the lines after "----", joined by "\n".
	Want string
	// Pos is "file:line" of the block's first line.
	Pos string

	header []string // the lines up to and including "----", verbatim
}

// chunk is a block, or prose kept verbatim.
type chunk struct {
	block *Block
	prose []string
}

// Parse reads a scenario file's text; name is used in positions.
func Parse(name, text string) ([]*Block, error) {
	chunks, err := parse(name, text)
	if err != nil {
		return nil, err
	}
	var blocks []*Block
	for _, c := range chunks {
		if c.block != nil {
			blocks = append(blocks, c.block)
		}
	}
	return blocks, nil
}

func parse(name, text string) ([]chunk, error) {
	var chunks []chunk
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		start := i
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			i++
		}
		c, err := parseChunk(name, start+1, lines[start:i])
		if err != nil {
			return nil, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// parseChunk reads the lines of one chunk; first is the line number of
// lines[0].
func parseChunk(name string, first int, lines []string) (chunk, error) {
	sep := -1
	for i, l := range lines {
		if l == separator {
			sep = i
			break
		}
	}
	if sep < 0 {
		for i, l := range lines {
			if !strings.HasPrefix(l, "#") {
				return chunk{}, fmt.Errorf("%s:%d: a directive outside a block (no %q follows it)", name, first+i, separator)
			}
		}
		return chunk{prose: lines}, nil
	}
	b := &Block{Pos: fmt.Sprintf("%s:%d", name, first), header: lines[:sep+1], Want: strings.Join(lines[sep+1:], "\n")}
	for i, l := range lines[:sep] {
		if strings.HasPrefix(l, "#") {
			if b.Name == "" {
				b.Name = strings.TrimSpace(strings.TrimPrefix(l, "#"))
			}
			continue
		}
		b.Directives = append(b.Directives, ParseDirective(fmt.Sprintf("%s:%d", name, first+i), l))
	}
	if b.Name == "" {
		b.Name = fmt.Sprintf("line %d", first)
	}
	return chunk{block: b}, nil
}

// Run runs every file matching glob (testdata/*.txt, say) as a subtest
// named after the file, through RunFile. newFile gives each file its own
// block runner, so that a driver that keeps state from block to block
// keeps it per file.
func Run(t *testing.T, glob string, newFile func() func(*Block) (string, error)) {
	t.Helper()
	for _, path := range Files(t, glob) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			RunFile(t, path, newFile())
		})
	}
}

// Files lists the files matching glob, and fails the test when there are
// none (a mistyped glob would pass silently otherwise).
func Files(t *testing.T, glob string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("scenario files %s: none found (%v)", glob, err)
	}
	return files
}

// RunFile runs the blocks of one file in order, each through run, which
// returns the block's output (no blank lines) or an error that fails the
// block; a block is not a subtest of its own, since state may carry from
// block to block. Each output is compared with the block's expected output
// — or, with -rewrite, written in its place. A driver that must wrap a
// whole file's run (in a testing/synctest bubble, say, where t.Run may not
// be called) calls RunFile from its own subtest, as Run does.
func RunFile(t *testing.T, path string, run func(*Block) (string, error)) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := parse(filepath.Base(path), string(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		b := c.block
		if b == nil {
			continue
		}
		got, err := run(b)
		if err == nil && strings.Contains("\n"+got+"\n", "\n\n") {
			err = errors.New("the output has a blank line, which would end the block")
		}
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", b.Pos, b.Name, err)
		case *rewrite:
			b.Want = got
		case got != b.Want:
			t.Errorf("%s: %s:\n%s\n----\ngot:\n%s\nwant:\n%s", b.Pos, b.Name, strings.Join(b.header[:len(b.header)-1], "\n"), got, b.Want)
		}
	}
	if !*rewrite || t.Failed() {
		return
	}
	if out := render(chunks); out != string(text) {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
	}
}

// render writes the chunks back as a file, one blank line between them.
func render(chunks []chunk) string {
	var sb strings.Builder
	for i, c := range chunks {
		if i > 0 {
			sb.WriteString("\n")
		}
		lines := c.prose
		if c.block != nil {
			lines = c.block.header
		}
		for _, l := range lines {
			sb.WriteString(l + "\n")
		}
		if c.block != nil && c.block.Want != "" {
			sb.WriteString(c.block.Want + "\n")
		}
	}
	return sb.String()
}
