package podworker

// saving is what the pod's goroutine keeps of its checkpoint's saves
// (checkpoint.go, podWorker.save): the last checkpoint saved, whether the
// latest state could not be saved, and a deferred save still to wait for.
// Owned by run (and by Restore before run starts). Its invariants: last is
// what the store holds, or is queued to hold (a deferred save counts as
// saved until it fails, when last is dropped so that the next save writes
// it again); failing is set from the first failure to the next success,
// and the FailedCheckpoint event is emitted once per such run (failed,
// lost report the first).
//
//	save ok ──▶ last = data, failing cleared
//	save failed ──▶ failing (retried every checkpointRetry: step, saveUntilSaved)
type saving struct {
	// last is the last checkpoint saved.
	last []byte
	// failing is set while the latest state could not be saved (a
	// FailedCheckpoint event said so).
	failing bool
	// deferred, when set, waits for the last checkpoint, which finish
	// saved deferred (podWorker.saveDeferred).
	deferred func()
}

// same says whether data is the checkpoint saved last.
func (s *saving) same(data []byte) bool {
	return string(data) == string(s.last)
}

// upToDate says whether data is saved already: then nothing is failing
// any more.
func (s *saving) upToDate(data []byte) bool {
	if !s.same(data) {
		return false
	}
	s.failing = false
	return true
}

// saved records data saved; it reports whether saves were failing until
// now.
func (s *saving) saved(data []byte) (recovered bool) {
	recovered = s.failing
	s.failing = false
	s.last = data
	return recovered
}

// failed records a failed save; it reports whether it is the first since
// the last success (the one the FailedCheckpoint event is for).
func (s *saving) failed() (first bool) {
	first = !s.failing
	s.failing = true
	return first
}

// queued records data handed to a deferred save, whose wait is then
// awaited by await: counted as saved meanwhile, so that the step's own
// save does not write it again, durably.
func (s *saving) queued(data []byte, wait func()) {
	s.deferred = wait
	s.last = data
}

// lost records that a deferred save failed: as a failed save, and the
// next save writes it again. It reports as failed does.
func (s *saving) lost() (first bool) {
	s.last = nil
	return s.failed()
}

// await waits for the deferred save queued, if any.
func (s *saving) await() {
	if f := s.deferred; f != nil {
		s.deferred = nil
		f()
	}
}
