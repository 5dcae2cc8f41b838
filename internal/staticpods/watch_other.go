//go:build !linux

package staticpods

import "errors"

// watcher is unavailable without inotify: the Source relies on its
// periodic rescans.
type watcher struct {
	events chan []fsEvent
}

func newWatcher(string) (*watcher, error) {
	return nil, errors.New("watching a directory needs inotify, which only Linux has")
}

func (*watcher) err() error { return nil }

func (*watcher) close() {}
