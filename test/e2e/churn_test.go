package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Churn: removed pods leave nothing behind (issue 12, item 3). A `podward
// serve` on the process runtime runs 2,000 pods through its CLI, in
// batches: 50 pods are applied, applied again with a changed label (the
// agent replaces each: 50 more pods, and a `replacement/<uid>` record each),
// then deleted. One batch makes the baseline; after 19 more, the state root
// holds the same paths, no more bytes outside the database, and a database
// at most twice the baseline's (bbolt never shrinks its file, and grows it
// by doubling), whose buckets hold as many keys as at the baseline. The kubelet removes a deleted pod's
// log directory with it (pkg/kubelet/kuberuntime/kuberuntime_gc.go,
// evictPodLogsDirectories), and the store keeps nothing per pod once the
// pod is gone.
//
// The database is read (read-only, with bbolt) while no agent holds it: the
// agent is stopped for each look, and the look after the churn follows a
// restart, which also checks that a start cleans up what it finds.
func TestChurnLeavesNoState(t *testing.T) {
	if testing.Short() {
		t.Skip("churns 2,000 pods: some two minutes")
	}
	t.Parallel()
	const (
		batches  = 20
		perBatch = 50 // names per batch; each gets two pods
		// churnTimeout bounds each wait of a batch.
		churnTimeout = 2 * time.Minute
	)
	dir := memoryDir(t)
	root := filepath.Join(dir, "root")
	manifests := t.TempDir()

	a := startAgentIn(t, dir)
	churnBatch(a, manifests, 0, perBatch, churnTimeout)
	a.stop()
	base := measureState(t, root)
	t.Logf("baseline after %d pods: %s", 2*perBatch, base)

	a = startAgentIn(t, dir)
	for b := 1; b < batches; b++ {
		churnBatch(a, manifests, b, perBatch, churnTimeout)
	}
	a.stop()
	a = startAgentIn(t, dir) // a start cleans up what it finds
	a.stop()
	after := measureState(t, root)
	t.Logf("after %d pods: %s", 2*perBatch*batches, after)

	if extra := after.newPaths(base); len(extra) > 0 {
		t.Errorf("%d paths under the state root that the baseline does not have, e.g.:\n  %s",
			len(extra), strings.Join(extra[:min(len(extra), 10)], "\n  "))
	}
	if after.otherBytes > base.otherBytes {
		t.Errorf("files outside the database use %d bytes, the baseline %d", after.otherBytes, base.otherBytes)
	}
	// bbolt never shrinks its file, and grows it by doubling up to 1 GiB:
	// a file twice the baseline's is one growth step, not leaked pages.
	if after.dbBytes > 2*base.dbBytes {
		t.Errorf("the database uses %d bytes, more than twice the baseline's %d", after.dbBytes, base.dbBytes)
	}
	if !equalCounts(after.keys, base.keys) {
		t.Errorf("keys per bucket %v, the baseline %v", after.keys, base.keys)
	}
}

// memoryDir is a directory for the test on a tmpfs (/dev/shm) when there is
// one, else in the test's temporary directory. The agent commits every
// write of its state with an fsync, one at a time, a dozen or more per
// pod: on a disk they make the test a third slower.
func memoryDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "podward-churn-")
	if err != nil {
		t.Logf("no tmpfs for the state (%v): using the test's temporary directory", err)
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// churnBatch runs batch b through the agent: perBatch pods created, each
// replaced by apply of a changed spec, then all deleted. Each pod's
// container writes a line to its log and exits 0.
func churnBatch(a *agent, dir string, b, perBatch int, within time.Duration) {
	t := a.t
	t.Helper()
	names := make([]string, perBatch)
	for i := range names {
		names[i] = fmt.Sprintf("pod/churn-%d-%d", b, i)
	}
	for gen := 1; gen <= 2; gen++ {
		var m strings.Builder
		for i := range names {
			fmt.Fprintf(&m, `---
apiVersion: v1
kind: Pod
metadata:
  name: churn-%d-%d
  labels: {gen: "%d"}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["echo", "churn %d-%d generation %d"]
`, b, i, gen, b, i, gen)
		}
		file := filepath.Join(dir, fmt.Sprintf("batch-%d-%d.yaml", b, gen))
		if err := os.WriteFile(file, []byte(m.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		a.mustCLI("apply", "-f", file)
		wait := append([]string{"wait", "--timeout", within.String()}, names...)
		if _, err := a.cliWithin(within+10*time.Second, append(wait, fmt.Sprintf("--for=jsonpath={.metadata.labels.gen}=%d", gen))...); err != nil {
			t.Fatalf("batch %d, generation %d: %v", b, gen, err)
		}
		if _, err := a.cliWithin(within+10*time.Second, append(wait, "--for=jsonpath={.status.phase}=Succeeded")...); err != nil {
			t.Fatalf("batch %d, generation %d: %v", b, gen, err)
		}
	}
	if _, err := a.cliWithin(within+10*time.Second, append([]string{"delete", "--timeout", within.String()}, names...)...); err != nil {
		t.Fatalf("batch %d: delete: %v", b, err)
	}
}

// stateUsage is what a state root holds.
type stateUsage struct {
	paths      []string // every path under the root, relative, sorted
	otherBytes int64    // disk usage (as du counts it) of everything but the database
	dbBytes    int64    // disk usage of the database file
	apparent   int64    // the size of everything (du --apparent-size)
	keys       map[string]int
}

func (u stateUsage) String() string {
	return fmt.Sprintf("%d paths, %d bytes (apparent size %d), of which the database %d; keys per bucket %v",
		len(u.paths), u.otherBytes+u.dbBytes, u.apparent, u.dbBytes, u.keys)
}

// newPaths are the paths of u that base does not have.
func (u stateUsage) newPaths(base stateUsage) []string {
	var extra []string
	for _, p := range u.paths {
		if _, found := slices.BinarySearch(base.paths, p); !found {
			extra = append(extra, p)
		}
	}
	return extra
}

// measureState looks at a state root no agent holds: its paths, its disk
// usage and the keys of its database, per bucket ("events/<uid>" for each
// pod's events bucket, counted together as "events/*" with the number of
// buckets as "events/buckets").
func measureState(t *testing.T, root string) stateUsage {
	t.Helper()
	db := filepath.Join(root, "state.db")
	u := stateUsage{keys: map[string]int{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		u.paths = append(u.paths, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		used := fi.Sys().(*syscall.Stat_t).Blocks * 512
		u.apparent += fi.Size()
		if path == db {
			u.dbBytes += used
		} else {
			u.otherBytes += used
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the state root: %v", err)
	}
	slices.Sort(u.paths)

	bdb, err := bolt.Open(db, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open the state database: %v", err)
	}
	defer bdb.Close()
	err = bdb.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v != nil {
					u.keys[string(name)]++
					return nil
				}
				// A nested bucket: a pod's events.
				u.keys[string(name)+"/buckets"]++
				sub := b.Bucket(k)
				if sub == nil {
					return errors.New("nested bucket vanished")
				}
				return sub.ForEach(func(_, _ []byte) error {
					u.keys[string(name)+"/*"]++
					return nil
				})
			})
		})
	})
	if err != nil {
		t.Fatalf("count the keys of the state database: %v", err)
	}
	return u
}

func equalCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
