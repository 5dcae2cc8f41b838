//go:build !linux

package crilog

import (
	"context"
	"errors"
)

type watcher struct{}

func watch(string) (*watcher, error) {
	return nil, errors.New("following a log needs inotify, which only Linux has")
}

func (*watcher) wait(context.Context) error { return nil }

func (*watcher) close() {}
