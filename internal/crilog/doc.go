// Package crilog writes and reads container logs in the CRI log format, the
// format the kubelet and every CRI runtime use on disk.
//
// A log file is a sequence of records, one per line:
//
//	<RFC3339Nano timestamp> <stream> <tag> <content>\n
//
// where stream is "stdout" or "stderr" and tag is "F" for a full line or "P"
// for a partial one. A line longer than MaxRecordSize is split into P records
// of MaxRecordSize bytes followed by one F record with the rest. A last line
// without a newline is written as an F record when its stream is closed. The
// content never contains the newline that ended the line.
//
// Writing: a Sink owns the output (usually the instance's log file, a
// LogFile) and serialises records; NewWriter gives one io.Writer per stream
// on top of it. Output the file cannot take (a full disk) is dropped and
// counted, and a marker record shows the gap once the file takes records
// again. A LogFile writes records whole or not at all and rotates itself as
// the kubelet's container log manager rotates logs (Rotation: <log>.<time>,
// older ones compressed, at most MaxFiles kept); RotatedName, RotatedLogs
// and PruneRotated are those rules for a runtime that rotates the logs its
// CRI runtime writes.
// Reading: Parse decodes one record, ReadLog reads a whole file (or what
// follows an offset, or its last lines, found from its end) and hands its
// lines over as it reads them, a long line in its pieces, so that memory
// stays bounded whatever a line's length; it can follow the file as it
// grows (it wakes on inotify events, so it never polls), across rotations,
// until its writer
// is known to be done.
// ReadTail reads only a log's last records, from its end, in bounded memory
// (for a termination message taken from the logs).
//
// It imports only the standard library and golang.org/x/sys/unix (the
// process runtime's shim binary links it); it knows nothing of pods or
// runtimes.
package crilog
