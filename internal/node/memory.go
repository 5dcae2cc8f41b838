package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// daemonGCPercent is the daemon's GOGC unless the environment sets one.
// The agent's heap is mostly its pods' specs and statuses, long-lived; Go's
// default (100) lets the heap grow to twice that between collections, 50
// to one and a half times. A collection of such a heap takes a few
// milliseconds of one core, concurrently, and comes twice as often in a
// burst of starts: some 6 % more of the agent's CPU there, none when idle.
const daemonGCPercent = 50

// tuneGC sets the daemon's GOGC to daemonGCPercent unless GOGC is set.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}

// releaseStartupMemory sets the daemon's GOGC (tuneGC) and gives back, once
// the daemon is assembled and before it serves, what only its start-up
// used: the Go heap's free pages, and the daemon's mappings of the pages of
// its own executable that nothing wrote. Initialisation (the Kubernetes libraries' type registrations, the
// runtime's tables) touches some 35 MB of the binary's text and read-only
// data, and a page touched once stays mapped, and counted in the RSS, for
// the life of the process; an idle agent runs almost none of it. Dropping
// the mappings (MADV_DONTNEED) leaves the pages in the page cache — for the
// shims and the CLI, which run the same binary — and the agent maps again,
// on its next touch, what it runs.
//
// Only a mapping of the executable without write permission and without a
// private copy of any page (smaps' Anonymous: 0 kB) is dropped: its pages
// are the file's, so mapping them again gives the same bytes. A mapping a
// dynamic loader relocated (a PIE's RELRO) has private pages and is left.
// Errors are logged, never fatal: the memory is then only not given back.
func releaseStartupMemory(log *slog.Logger) {
	tuneGC()
	debug.FreeOSMemory()
	dropExecutableMappings(log)
}

// dropExecutableMappings drops the clean, read-only mappings of the
// executable (see releaseStartupMemory).
func dropExecutableMappings(log *slog.Logger) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		log.Debug("release start-up memory", "err", err)
		return
	}
	defer f.Close()
	exe, err := os.Executable()
	if err != nil {
		log.Debug("release start-up memory", "err", err)
		return
	}
	maps, err := cleanReadOnlyMappings(f, exe)
	if err != nil {
		log.Debug("release start-up memory", "err", err)
		return
	}
	for _, m := range maps {
		// The raw call: the range is no Go memory, which unix.Madvise
		// would want as a slice.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			log.Debug("release start-up memory", "mapping", fmt.Sprintf("%x-%x", m.start, m.end), "err", errno)
		}
	}
}

// startupSettle is how long after it begins to serve the daemon drops its
// mappings of the binary a second time: the first requests' set-up and the
// first collections touch a part of it once more (some 12 MB), and then,
// idle, next to none.
const startupSettle = 2 * time.Second

// remapEvery is how often, while it serves, the daemon drops them again: a
// burst of work (starting 1,000 pods) maps some 30 MB of the binary, which
// idle pods never run again. Mapping back what it runs costs a minor fault
// a page; the drop itself reads /proc/self/smaps.
const remapEvery = time.Minute

// releaseWhileServing drops the daemon's clean mappings of its executable
// startupSettle after it is called, then every remapEvery, until ctx ends.
func releaseWhileServing(ctx context.Context, log *slog.Logger) {
	t := time.NewTimer(startupSettle)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			dropExecutableMappings(log)
			t.Reset(remapEvery)
		case <-ctx.Done():
			return
		}
	}
}

// mapping is one range of the address space, [start, end).
type mapping struct{ start, end uintptr }

// cleanReadOnlyMappings returns the mappings of path in smaps (the text of
// /proc/PID/smaps) that are not writable and hold no private page.
func cleanReadOnlyMappings(smaps io.Reader, path string) ([]mapping, error) {
	var (
		out     []mapping
		cur     mapping
		current bool // the mapping being read is a candidate
	)
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if addr, ok := strings.CutSuffix(fields[0], ":"); ok {
			// "Anonymous:   0 kB" and the like, of the mapping above.
			if addr == "Anonymous" && current {
				if len(fields) >= 2 && fields[1] == "0" {
					out = append(out, cur)
				}
				current = false
			}
			continue
		}
		// "start-end perms offset dev inode path"
		current = false
		if len(fields) < 6 || fields[5] != path || strings.ContainsRune(fields[1], 'w') {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		cur, current = mapping{uintptr(start), uintptr(end)}, true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("smaps: %w", err)
	}
	return out, nil
}
