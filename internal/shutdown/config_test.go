package shutdown

import (
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestGroups(t *testing.T) {
	s := time.Second
	cases := map[string]struct {
		grace, critical time.Duration
		byPriority      []Group
		want            []Group
		err             bool
	}{
		"not configured": {},
		// The kubelet's migrateConfig: the others get grace-critical, the
		// critical pods (priority >= 2000000000) the critical part.
		"two groups":                   {grace: 30 * s, critical: 10 * s, want: []Group{{0, 20 * s}, {SystemCriticalPriority, 10 * s}}},
		"no reserve for critical pods": {grace: 30 * s, want: []Group{{0, 30 * s}, {SystemCriticalPriority, 0}}},
		"whole seconds":                {grace: 30*s + 900*time.Millisecond, critical: 10*s + 500*time.Millisecond, want: []Group{{0, 20 * s}, {SystemCriticalPriority, 10 * s}}},
		"by priority, sorted": {
			byPriority: []Group{{100000, 10 * s}, {-10, 5 * s}, {0, 20 * s}},
			want:       []Group{{-10, 5 * s}, {0, 20 * s}, {100000, 10 * s}},
		},
		"negative":            {grace: -s, err: true},
		"critical negative":   {grace: s, critical: -s, err: true},
		"critical too long":   {grace: 10 * s, critical: 11 * s, err: true},
		"both ways":           {grace: 10 * s, byPriority: []Group{{0, s}}, err: true},
		"a priority twice":    {byPriority: []Group{{0, s}, {0, 2 * s}}, err: true},
		"a negative budget":   {byPriority: []Group{{0, -s}}, err: true},
		"critical only, both": {critical: s, byPriority: []Group{{0, s}}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Groups(tc.grace, tc.critical, tc.byPriority)
			if tc.err {
				if !errors.Is(err, ErrBadConfig) {
					t.Fatalf("Groups: %v, %v; want an error matching ErrBadConfig", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Groups: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseGroups(t *testing.T) {
	got, err := ParseGroups(" 0=20, 2000000000=10,-5=0")
	want := []Group{{0, 20 * time.Second}, {SystemCriticalPriority, 10 * time.Second}, {-5, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseGroups: %v, %v; want %v", got, err, want)
	}
	if s := FormatGroups(want); s != "0=20,2000000000=10,-5=0" {
		t.Errorf("FormatGroups: %q", s)
	}
	for _, bad := range []string{"0", "x=1", "0=x", "0=-1", "3000000000=1", "0=1s"} {
		if g, err := ParseGroups(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseGroups(%q) = %v, %v; want an error matching ErrBadConfig", bad, g, err)
		}
	}
	if g, err := ParseGroups(""); g != nil || err != nil {
		t.Errorf("ParseGroups(\"\") = %v, %v", g, err)
	}
}

func TestPodPriorityAndGroup(t *testing.T) {
	groups := []Group{{-10, 0}, {0, 0}, {1000, 0}, {SystemCriticalPriority, 0}}
	prio := func(p int32) *int32 { return &p }
	cases := map[string]struct {
		spec      v1.PodSpec
		priority  int32
		wantGroup int
	}{
		"no priority":                    {spec: v1.PodSpec{}, priority: 0, wantGroup: 1},
		"below every group":              {spec: v1.PodSpec{Priority: prio(-100)}, priority: -100, wantGroup: 0},
		"between two groups":             {spec: v1.PodSpec{Priority: prio(999)}, priority: 999, wantGroup: 1},
		"on a group's boundary":          {spec: v1.PodSpec{Priority: prio(1000)}, priority: 1000, wantGroup: 2},
		"above every group":              {spec: v1.PodSpec{Priority: prio(SystemCriticalPriority + 1000)}, priority: SystemCriticalPriority + 1000, wantGroup: 3},
		"cluster critical class":         {spec: v1.PodSpec{PriorityClassName: "system-cluster-critical"}, priority: SystemCriticalPriority, wantGroup: 3},
		"node critical class":            {spec: v1.PodSpec{PriorityClassName: "system-node-critical"}, priority: SystemCriticalPriority + 1000, wantGroup: 3},
		"another class":                  {spec: v1.PodSpec{PriorityClassName: "high"}, priority: 0, wantGroup: 1},
		"the API server's priority wins": {spec: v1.PodSpec{PriorityClassName: "system-node-critical", Priority: prio(5)}, priority: 5, wantGroup: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := PodPriority(&v1.Pod{Spec: tc.spec})
			if p != tc.priority {
				t.Fatalf("PodPriority = %d, want %d", p, tc.priority)
			}
			if g := groupOf(groups, p); g != tc.wantGroup {
				t.Errorf("groupOf(%d) = %d, want %d", p, g, tc.wantGroup)
			}
		})
	}
}

func TestPodGraceAndScale(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		own    *int64
		budget time.Duration
		want   int64
	}{
		{nil, 20 * time.Second, 20}, // the pod's default (30 s) is longer
		{secs(5), 20 * time.Second, 5},
		{secs(20), 20 * time.Second, 20},
		{secs(60), 20 * time.Second, 20},
		{secs(60), 2500 * time.Millisecond, 2},
		{secs(0), 20 * time.Second, 0},
	} {
		if got := podGrace(&v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: tc.own}}, tc.budget); got != tc.want {
			t.Errorf("podGrace(own %v, budget %v) = %d, want %d", tc.own, tc.budget, got, tc.want)
		}
	}
	groups := []Group{{0, 20 * time.Second}, {SystemCriticalPriority, 10 * time.Second}}
	if got := scale(groups, 0); !reflect.DeepEqual(got, groups) {
		t.Errorf("scale(0) = %v", got)
	}
	if got := scale(groups, time.Minute); !reflect.DeepEqual(got, groups) {
		t.Errorf("scale(1m) = %v", got)
	}
	want := []Group{{0, 4 * time.Second}, {SystemCriticalPriority, 2 * time.Second}}
	if got := scale(groups, 6*time.Second); !reflect.DeepEqual(got, want) {
		t.Errorf("scale(6s) = %v, want %v", got, want)
	}
}
