//go:build !linux

package crilog

import (
	"errors"
	"os"
)

var errReserveUnsupported = errors.New("reserving room is only done on Linux")

func freeSpace(*os.File) (int64, error) { return 0, errReserveUnsupported }

func reserveRoom(*os.File, int64, int64) error { return errReserveUnsupported }
