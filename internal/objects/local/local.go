package local

import (
	"fmt"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/objects"
)

// DefaultMaxObjects bounds the ConfigMaps and Secrets one agent holds,
// both kinds together, when Options.MaxObjects is not set.
const DefaultMaxObjects = 10_000

// DefaultMaxBytes bounds the data (keys and values) of all the ConfigMaps
// and Secrets together, when Options.MaxBytes is not set: they are held in
// memory as well as in the store. 10,000 objects of the API server's
// largest (1 MiB) would be 10 GiB.
const DefaultMaxBytes = 256 << 20

// Store is what Objects keeps durably (*store.Store implements it).
type Store interface {
	PutConfigMap(cm *v1.ConfigMap) error
	PutSecret(s *v1.Secret) error
	DeleteConfigMap(ns, name string) error
	DeleteSecret(ns, name string) error
	ListConfigMaps() ([]*v1.ConfigMap, error)
	ListSecrets() ([]*v1.Secret, error)
}

// Options tune Objects. The zero value holds them in memory only.
type Options struct {
	// Store keeps the objects across restarts; nil keeps them in memory
	// (podward run's file).
	Store Store
	// Clock dates the objects created; nil is the real clock.
	Clock clock.PassiveClock
	// OnChange is called after each create, update and delete, outside
	// any lock; it must not block.
	OnChange func(objects.Change)
	// MaxObjects bounds the objects held; zero or less is
	// DefaultMaxObjects.
	MaxObjects int
	// MaxBytes bounds the data of all the objects; zero or less is
	// DefaultMaxBytes.
	MaxBytes int64
}

// Result is what an Apply did, in kubectl's words.
type Result int

// Apply's outcomes.
const (
	Created Result = iota + 1
	Configured
	Unchanged
)

func (r Result) String() string {
	switch r {
	case Created:
		return "created"
	case Configured:
		return "configured"
	case Unchanged:
		return "unchanged"
	default:
		return "Result(" + strconv.Itoa(int(r)) + ")"
	}
}

type key struct {
	kind      objects.Kind
	namespace string
	name      string
}

// Objects holds the ConfigMaps and Secrets of a standalone agent. It is
// safe for concurrent use. The objects it returns are shared and never
// modified: callers must not modify them either.
type Objects struct {
	opts Options
	// write serializes the writers, across their store I/O, so that each
	// decides created/configured against what the one before left; readers
	// never wait for it.
	write sync.Mutex
	mu    sync.RWMutex
	// objs holds *v1.ConfigMap and *v1.Secret values.
	objs map[key]metav1.Object
	rv   uint64 // the last resourceVersion given
	// bytes is the data of all the objects (dataSize); only the writer
	// (holding write) changes it.
	bytes int64
}

var _ objects.Getter = (*Objects)(nil)

// New returns the objects of opts.Store (none without a store), ready.
func New(opts Options) (*Objects, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxObjects <= 0 {
		opts.MaxObjects = DefaultMaxObjects
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	o := &Objects{opts: opts, objs: map[key]metav1.Object{}}
	if opts.Store == nil {
		return o, nil
	}
	cms, err := opts.Store.ListConfigMaps()
	if err != nil {
		return nil, fmt.Errorf("load objects: %w", err)
	}
	secrets, err := opts.Store.ListSecrets()
	if err != nil {
		return nil, fmt.Errorf("load objects: %w", err)
	}
	for _, cm := range cms {
		o.objs[key{objects.KindConfigMap, cm.Namespace, cm.Name}] = cm
		o.bytes += dataSize(cm)
		o.noteRV(cm.ResourceVersion)
	}
	for _, s := range secrets {
		o.objs[key{objects.KindSecret, s.Namespace, s.Name}] = s
		o.bytes += dataSize(s)
		o.noteRV(s.ResourceVersion)
	}
	return o, nil
}

func (o *Objects) noteRV(rv string) {
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > o.rv {
		o.rv = n
	}
}
