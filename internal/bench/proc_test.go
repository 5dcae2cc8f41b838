package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a ')' in it; utime 250, stime 40,
	// cutime 7, cstime 3 ticks.
	line := "4242 (pod ward) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 40 7 3 20 0 12 0 5000 100000000 2000 18446744073709551615\n"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{User: 2500 * time.Millisecond, System: 400 * time.Millisecond, ChildUser: 70 * time.Millisecond, ChildSystem: 30 * time.Millisecond}
	if got != want {
		t.Errorf("parseStat = %+v, want %+v", got, want)
	}
	if got.Own() != 2900*time.Millisecond || got.WithChildren() != 3000*time.Millisecond {
		t.Errorf("Own %v WithChildren %v", got.Own(), got.WithChildren())
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 nan 1 1 1 1"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) did not fail", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	text := "Name:\tpodward\nState:\tS (sleeping)\nVmHWM:\t   51200 kB\nVmRSS:\t   43520 kB\nRssAnon:\t40000 kB\nRssFile:\t3000 kB\nRssShmem:\t520 kB\nThreads:\t17\n"
	got, err := parseStatus(text)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Status{RSSBytes: 43520 * 1024, PeakRSSBytes: 51200 * 1024, AnonBytes: 40000 * 1024, FileBytes: 3520 * 1024, Threads: 17}) {
		t.Errorf("parseStatus = %+v", got)
	}
	if _, err := parseStatus("Name:\tzombie\nThreads:\t1\n"); err == nil {
		t.Error("a status without VmRSS did not fail")
	}
}

func TestParseRollupPSS(t *testing.T) {
	text := "55d0c0000000-7ffc00000000 ---p 00000000 00:00 0    [rollup]\nRss:\t   35000 kB\nPss:\t    4600 kB\nPss_Anon:\t1000 kB\n"
	got, err := parseRollupPSS(text)
	if err != nil {
		t.Fatal(err)
	}
	if got != 4600*1024 {
		t.Errorf("parseRollupPSS = %d", got)
	}
	if _, err := parseRollupPSS("Rss: 1 kB\n"); err == nil {
		t.Error("no Pss line did not fail")
	}
}

// The readers against this very process's /proc entries.
func TestReadersOfSelf(t *testing.T) {
	pid := os.Getpid()
	if _, err := ReadCPU(pid); err != nil {
		t.Error(err)
	}
	st, err := ReadStatus(pid)
	if err != nil || st.RSSBytes <= 0 || st.Threads <= 0 {
		t.Errorf("ReadStatus = %+v, %v", st, err)
	}
	if pss, err := ReadPSS(pid); err != nil || pss <= 0 {
		t.Errorf("ReadPSS = %d, %v", pss, err)
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	before, err := CountFDs(pid)
	f.Close()
	after, err2 := CountFDs(pid)
	if err != nil || err2 != nil || before != after+1 {
		t.Errorf("CountFDs with a file open %d (%v), after closing it %d (%v)", before, err, after, err2)
	}
}

func TestFindProcs(t *testing.T) {
	// A fake /proc: 10 is a shim of our root, 11 a shim of another, 12 a
	// container with the run's marker (10's child), 13 a kernel thread
	// (empty cmdline), 14 a spare of our root that holds 15, 16 an idle
	// spare of ours, 17 a spare of another root, "self" no PID.
	root := t.TempDir()
	write := func(pid int, file, content string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(10, "cmdline", "podward-shim\x00/r/ours/pods/x\x00")
	write(11, "cmdline", "podward-shim\x00/r/other/pods/y\x00")
	write(12, "cmdline", "sleep\x0086400\x00")
	write(12, "environ", "A=1\x00BENCH_RUN=abc\x00")
	write(12, "stat", "12 (sleep) S 10 12 12 0")
	write(13, "cmdline", "")
	write(14, "cmdline", "podward-shim\x00spare\x00/r/ours/process\x00")
	write(15, "cmdline", "sh\x00")
	write(15, "stat", "15 (s h) S 14 15 15 0")
	write(16, "cmdline", "podward-shim\x00spare\x00/r/ours/process\x00")
	write(17, "cmdline", "podward-shim\x00spare\x00/r/other/process\x00")
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })

	shims, err := FindProcs(shimOf("/r/ours"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shims) != 3 || shims[0].PID != 10 || shims[1].PID != 14 || shims[2].PID != 16 {
		t.Errorf("shims of /r/ours: %+v", shims)
	}
	split, err := FindShims("/r/ours")
	if err != nil {
		t.Fatal(err)
	}
	if len(split.Holding) != 2 || split.Holding[0].PID != 10 || split.Holding[1].PID != 14 || len(split.Idle) != 1 || split.Idle[0].PID != 16 {
		t.Errorf("FindShims(/r/ours): %+v", split)
	}
	marked, err := FindProcs(markedWith("BENCH_RUN=abc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) != 1 || marked[0].PID != 12 || !slices.Equal(marked[0].Argv, []string{"sleep", "86400"}) {
		t.Errorf("marked processes: %+v", marked)
	}
}

func TestParseEpochRealtime(t *testing.T) {
	got, err := parseEpochRealtime("1796144400.461513\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1796144400, 461513000); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseEpochRealtime("$EPOCHREALTIME\n"); err == nil {
		t.Error("a shell without $EPOCHREALTIME was not refused")
	}
}
