package timeline

import (
	"strings"
	"testing"
)

// TestTextRows draws a pod with a sidecar restart and two defer containers
// and checks the picture row by row: one row per instance, each restart
// its own, in the order their containers first started.
func TestTextRows(t *testing.T) {
	p := demoPod()
	var b strings.Builder
	if err := Text(&b, p, p.DefaultWindow(), TextOptions{Width: 100}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pod default/demo (uid 5f0c7d2e-0000-4000-8000-000000000001) from 2026-03-01T12:00:00.000Z, 7.3s",
		"                  0s              2s              4s               6s",
		"                  ┬───────────────┬───────────────┬────────────────┬──────────",
		"init    setup  #0 █████                                    │                   exit 0",
		"sidecar proxy  #0     █████████!███◆▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒✕       │                   exit 137, SIGKILL",
		"sidecar proxy  #1                                   █████████████████████████◆ exit 0, after SIGTERM",
		"main    app    #0       ███████████████████████████████████████████████████◆▒▒ exit 0, after SIGTERM",
		"defer   upload #0                                          ██████████          exit 1",
		"defer   upload #1                                          │        ██████     exit 0",
		"defer   notify #0                                          │             ███   exit 0",
		"│ +5s termination requested (Deleted)",
		"┆ +35s deadline (30s grace period), after the end",
		"  +7.3s terminated",
		"█ running  ▒ stopping  ! probe failed  ◆ stop signal  ✕ SIGKILL  │ termination requested  ┆ deadline",
	}
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("row %d:\n got %q\nwant %q", i, g, w)
		}
	}
}

// TestTextColor colours the bars by role and the failures red only when
// asked; without colour there is no escape at all.
func TestTextColor(t *testing.T) {
	p := demoPod()
	var plain, color strings.Builder
	if err := Text(&plain, p, p.DefaultWindow(), TextOptions{Width: 100}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("escape sequences without colour:\n%q", plain.String())
	}
	if err := Text(&color, p, p.DefaultWindow(), TextOptions{Width: 100, Color: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{roleColors[RoleInit] + "█", roleColors[RoleDefer] + "█", ansiRed + " exit 137, SIGKILL", ansiBold + ansiRed + "✕"} {
		if !strings.Contains(color.String(), want) {
			t.Errorf("coloured picture has no %q", want)
		}
	}
}

// TestTextWidth keeps every chart line within the width asked for.
func TestTextWidth(t *testing.T) {
	p := demoPod()
	for _, width := range []int{60, 80, 160} {
		var b strings.Builder
		if err := Text(&b, p, p.DefaultWindow(), TextOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		for _, ln := range lines[1 : len(lines)-5] { // the chart, not the title nor the notes
			if n := len([]rune(ln)); n > width {
				t.Errorf("width %d: line of %d: %q", width, n, ln)
			}
		}
	}
}

// TestTextRunning draws what still runs up to Now.
func TestTextRunning(t *testing.T) {
	h := NewHistory(Limits{})
	ref := PodRef{Namespace: "default", Name: "web", UID: "u1", CreatedAt: t0}
	h.Note(ref, Note{Kind: NoteStarted, At: at(0), Container: "app", Role: RoleMain})
	p, _ := h.Get("u1")
	p.Now = at(10)
	var b strings.Builder
	if err := Text(&b, p, p.DefaultWindow(), TextOptions{Width: 60}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(lines[0], "10s, still running") {
		t.Errorf("title %q", lines[0])
	}
	if want := "main    app #0 " + strings.Repeat("█", 60-len("main    app #0 ")-len(" running")) + " running"; lines[3] != want {
		t.Errorf("row\n got %q\nwant %q", lines[3], want)
	}
}
