package shutdown

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Priorities of the system priority classes, as the API server gives them
// (pkg/apis/scheduling: SystemCriticalPriority, and system-node-critical
// 1000 above it).
const (
	SystemCriticalPriority     int32 = 2000000000
	systemNodeCriticalPriority int32 = SystemCriticalPriority + 1000
)

// The system priority classes' names.
const (
	systemClusterCritical = "system-cluster-critical"
	systemNodeCritical    = "system-node-critical"
)

// Group is one priority group of a node shutdown: the pods whose priority
// is at least Priority (and below the next group's) are terminated
// together, within Budget (the kubelet's ShutdownGracePeriodByPodPriority).
type Group struct {
	Priority int32
	Budget   time.Duration
}

// ErrBadConfig is matched by every error of Groups and ParseGroups.
var ErrBadConfig = errors.New("bad node shutdown configuration")

func badConfig(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
}

// Groups is the kubelet's shutdown configuration as groups, lowest
// priority first: byPriority when given (sorted), else the two groups of
// gracePeriod (--shutdown-grace-period) and criticalPods
// (--shutdown-grace-period-critical-pods), the critical pods last with
// criticalPods and the others first with the rest — as the kubelet's
// migrateConfig makes them. Budgets are whole seconds (shorter parts are
// dropped, as the kubelet does). No group (nil) means node shutdown is not
// configured, as with the kubelet's defaults. It refuses what the
// kubelet's validation refuses: negative periods, a critical period longer
// than the whole, both ways at once; and two groups of one priority.
func Groups(gracePeriod, criticalPods time.Duration, byPriority []Group) ([]Group, error) {
	switch {
	case gracePeriod < 0:
		return nil, badConfig("--shutdown-grace-period %v must be >= 0", gracePeriod)
	case criticalPods < 0:
		return nil, badConfig("--shutdown-grace-period-critical-pods %v must be >= 0", criticalPods)
	case criticalPods > gracePeriod:
		return nil, badConfig("--shutdown-grace-period-critical-pods %v must be <= --shutdown-grace-period %v", criticalPods, gracePeriod)
	case len(byPriority) > 0 && gracePeriod > 0:
		return nil, badConfig("cannot specify both --shutdown-grace-period-by-pod-priority and --shutdown-grace-period at the same time")
	}
	if len(byPriority) > 0 {
		groups := slices.Clone(byPriority)
		slices.SortFunc(groups, func(a, b Group) int { return compare(a.Priority, b.Priority) })
		for i, g := range groups {
			if g.Budget < 0 {
				return nil, badConfig("--shutdown-grace-period-by-pod-priority: priority %d: %v must be >= 0", g.Priority, g.Budget)
			}
			if i > 0 && groups[i-1].Priority == g.Priority {
				return nil, badConfig("--shutdown-grace-period-by-pod-priority: priority %d is given twice", g.Priority)
			}
			groups[i].Budget = g.Budget.Truncate(time.Second)
		}
		return groups, nil
	}
	if gracePeriod == 0 {
		return nil, nil
	}
	critical := criticalPods.Truncate(time.Second)
	return []Group{
		{Priority: 0, Budget: gracePeriod.Truncate(time.Second) - critical},
		{Priority: SystemCriticalPriority, Budget: critical},
	}, nil
}

func compare(a, b int32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}

// ParseGroups reads --shutdown-grace-period-by-pod-priority: a
// comma-separated list of priority=seconds ("0=20,2000000000=10"); ""
// is none.
func ParseGroups(s string) ([]Group, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var groups []Group
	for _, item := range strings.Split(s, ",") {
		p, secs, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, badConfig("--shutdown-grace-period-by-pod-priority: %q is not priority=seconds", item)
		}
		prio, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return nil, badConfig("--shutdown-grace-period-by-pod-priority: priority %q: not a 32-bit integer", p)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(secs), 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Second) {
			return nil, badConfig("--shutdown-grace-period-by-pod-priority: seconds %q of priority %d: not a number of seconds >= 0", secs, prio)
		}
		groups = append(groups, Group{Priority: int32(prio), Budget: time.Duration(n) * time.Second})
	}
	return groups, nil
}

// FormatGroups writes groups as ParseGroups reads them.
func FormatGroups(groups []Group) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%d=%d", g.Priority, int64(g.Budget/time.Second))
	}
	return strings.Join(parts, ",")
}

// PodPriority is the priority a shutdown sorts pod by: spec.priority, which
// the API server sets from the pod's priority class; for a pod without it
// (a standalone pod, which no API server admitted), the priority of its
// spec.priorityClassName when that is system-node-critical or
// system-cluster-critical, else 0, the priority of a pod without a class
// when no class is the default (the kubelet groups by spec.priority alone).
func PodPriority(pod *v1.Pod) int32 {
	if p := pod.Spec.Priority; p != nil {
		return *p
	}
	switch pod.Spec.PriorityClassName {
	case systemNodeCritical:
		return systemNodeCriticalPriority
	case systemClusterCritical:
		return SystemCriticalPriority
	}
	return 0
}

// groupOf is the index of the group a pod of priority p belongs to: the
// last group whose priority is not above p, or the first when every
// group's is (the kubelet's groupByPriority). groups is sorted and not
// empty.
func groupOf(groups []Group, p int32) int {
	i := 0
	for j, g := range groups {
		if g.Priority <= p {
			i = j
		}
	}
	return i
}

// podGrace is the grace period a shutdown gives pod in a group of budget:
// the budget in whole seconds, or the pod's own terminationGracePeriodSeconds
// when that is not longer (the kubelet's killPods).
func podGrace(pod *v1.Pod, budget time.Duration) int64 {
	g := int64(budget / time.Second)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own <= g {
		g = max(*own, 0)
	}
	return g
}

// scale fits groups into grace when grace is positive and shorter than
// their budgets' sum: every budget shrinks in proportion, so that each
// group keeps its share (the critical pods their reserve). Otherwise the
// groups are returned as they are.
func scale(groups []Group, grace time.Duration) []Group {
	var total time.Duration
	for _, g := range groups {
		total += g.Budget
	}
	if grace <= 0 || grace >= total {
		return slices.Clone(groups)
	}
	out := make([]Group, len(groups))
	for i, g := range groups {
		out[i] = Group{Priority: g.Priority, Budget: time.Duration(float64(g.Budget) * float64(grace) / float64(total))}
	}
	return out
}
