package staticpods

import "fmt"

// eventKind is what a directory event means for the Source.
type eventKind int

// Event kinds start at one so that the zero value is never valid.
const (
	// evWritten: the file named is complete (closed after writing, or
	// renamed into place): read it now.
	evWritten eventKind = iota + 1
	// evChanged: the file named was created, had its attributes changed,
	// or disappeared: it may still be in flux, read it once it settled.
	evChanged
	// evModified: the file named was written to and is still open: if it
	// is waiting to settle, it waits longer.
	evModified
	// evOverflow: events were lost; rescan everything.
	evOverflow
	// evDirLost: the directory itself was removed or moved; watch it again.
	evDirLost
)

func (k eventKind) String() string {
	switch k {
	case evWritten:
		return "written"
	case evChanged:
		return "changed"
	case evModified:
		return "modified"
	case evOverflow:
		return "overflow"
	case evDirLost:
		return "dir-lost"
	default:
		return fmt.Sprintf("eventKind(%d)", int(k))
	}
}

// fsEvent is one event about the watched directory; name is the file's
// name in it (empty for evOverflow and evDirLost).
type fsEvent struct {
	kind eventKind
	name string
}
