package staticpods

import (
	"strings"
	"sync"
	"testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"

// objectsApplied records the objects a Source applies.
type objectsApplied struct {
	mu    sync.Mutex
	names []string
	err   error
}

func (o *objectsApplied) apply(obj model.Object) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.names = append(o.names, obj.Kind()+"/"+obj.Meta().Name)
	return nil
}

func (o *objectsApplied) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.names...)
}

func TestFileObjectsAppliedBeforeItsPods(t *testing.T) {
	var objs objectsApplied
	h := newHarness(t, WithObjects(objs.apply))
	h.start()
	// The pod first: the order of the file does not matter.
	h.write("web.yaml", docs(pod("web", "nginx:1"), configMap))
	h.fake.waitFor(t, "pod created", applied("default/web", agent.Created, 1))
	if got := objs.list(); len(got) != 1 || got[0] != "ConfigMap/settings" {
		t.Errorf("objects applied = %v, want ConfigMap/settings", got)
	}
}

func TestFileObjectsRefusedOrFailingRejectTheFile(t *testing.T) {
	for name, opts := range map[string][]Option{
		"no objects taken": nil,
		"object refused":   {WithObjects((&objectsApplied{err: errString("immutable")}).apply)},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, opts...)
			h.start()
			h.write("web.yaml", docs(pod("web", "nginx:1"), configMap))
			h.fake.waitFor(t, "the file reported", func(_ []call, reports []report) bool {
				return len(reportsFor(reports, h.path("web.yaml"))) == 1
			})
			calls, reports := h.fake.snapshot()
			if len(calls) != 0 {
				t.Errorf("pods applied from a rejected file: %v", calls)
			}
			if msg := reports[0].err.Error(); !strings.Contains(msg, "ConfigMap") {
				t.Errorf("reported %q, want it to name the ConfigMap", msg)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }
