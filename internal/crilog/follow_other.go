//go:build !linux

package crilog

import (
	"context"
	"errors"
	"os"
)

type watcher struct{}

func watch(string) (*watcher, error) {
	return nil, errors.New("following a log needs inotify, which only Linux has")
}

func (*watcher) wait(context.Context) error { return nil }

func (*watcher) rewatch(*os.File) error { return nil }

func (*watcher) writerGone() bool { return true }

func (*watcher) stillCurrent() {}

func (*watcher) close() {}
