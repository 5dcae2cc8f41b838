//go:build unix && !linux

package prober

import (
	"errors"
	"time"
)

// floorLoop is only written for Linux.
type floorLoop struct{}

func newFloorLoop(int, bool) (*floorLoop, error) { return nil, errors.ErrUnsupported }
func (*floorLoop) once() error                   { return errors.ErrUnsupported }
func (*floorLoop) close()                        {}

func procCPU(int) time.Duration { return 0 }
func softirqThreads() []int     { return nil }
