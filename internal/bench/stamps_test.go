package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A stamp written (whole, then closed) before or after the wait began is
// read once, and its file removed.
func TestStampsWait(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stamps")
	s, err := newStamps(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := os.WriteFile(filepath.Join(dir, "p.a"), []byte("1796144400.000001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan []time.Time, 1)
	go func() {
		at, err := s.wait(ctx, []string{"p.a", "p.b"})
		if err != nil {
			t.Error(err)
		}
		done <- at
	}()
	if err := os.WriteFile(filepath.Join(dir, "p.b"), []byte("1796144401.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := <-done
	if len(at) != 2 || !at[0].Equal(time.Unix(1796144400, 1000)) || !at[1].Equal(time.Unix(1796144401, 5e8)) {
		t.Fatalf("stamps %v", at)
	}
	if got := latest(at); !got.Equal(at[1]) {
		t.Errorf("latest = %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "p.a")); !os.IsNotExist(err) {
		t.Errorf("the stamp file is still there: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.c"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wait(ctx, []string{"p.c"}); err == nil {
		t.Error("a bad stamp was accepted")
	}
}
