package daemon

import (
	"os"
	"runtime/debug"
)

// daemonGCPercent is the daemon's GOGC unless the environment sets one.
// The agent's heap is mostly its pods' specs and statuses, long-lived; Go's
// default (100) lets the heap grow to twice that between collections, 50
// to one and a half times. A collection of such a heap takes a few
// milliseconds of one core, concurrently, and comes twice as often in a
// burst of starts: some 6 % more of the agent's CPU there, none when idle.
const daemonGCPercent = 50

// releaseStartupMemory sets the daemon's GOGC to daemonGCPercent unless
// GOGC is set, and gives the Go heap's free pages back once the daemon is
// assembled and before it serves: what only its start-up used (decoding,
// the store's open) would otherwise stay until the scavenger's pace
// returns it.
//
// The daemon's mappings of its own executable are left alone: the
// Kubernetes libraries' initialisation touches some 35 MB of the binary's
// text and read-only data, counted in the RSS as file pages for the life
// of the process. Dropping them (MADV_DONTNEED) would lower the figure
// but not the machine's memory use, since the pages stay in the page
// cache, and the kernel reclaims clean file pages under pressure anyway;
// the bench reports the RSS's anonymous and file parts apart instead.
func releaseStartupMemory() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
	debug.FreeOSMemory()
}
