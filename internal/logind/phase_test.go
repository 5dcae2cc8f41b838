package logind

import "testing"

func TestNext(t *testing.T) {
	type to struct {
		phase  phase
		action action
	}
	for name, tc := range map[string]struct {
		from  phase
		event event
		want  to
	}{
		"idle: a shutdown begins the node shutdown":       {phaseIdle, evShutdown, to{phaseShuttingDown, actBegin}},
		"idle: a cancel is spurious, the lock is held":    {phaseIdle, evCancel, to{phaseIdle, actNone}},
		"idle: done is stale":                             {phaseIdle, evDone, to{phaseIdle, actNone}},
		"idle: budgetSpent is stale":                      {phaseIdle, evBudgetSpent, to{phaseIdle, actNone}},
		"shuttingDown: done releases the lock":            {phaseShuttingDown, evDone, to{phaseReleased, actRelease}},
		"shuttingDown: budgetSpent releases the lock":     {phaseShuttingDown, evBudgetSpent, to{phaseReleased, actRelease}},
		"shuttingDown: a cancel keeps the lock":           {phaseShuttingDown, evCancel, to{phaseIdle, actCancel}},
		"shuttingDown: a second shutdown is the same one": {phaseShuttingDown, evShutdown, to{phaseShuttingDown, actNone}},
		"released: a cancel takes the lock again":         {phaseReleased, evCancel, to{phaseIdle, actCancelRelock}},
		"released: a shutdown is the one going on":        {phaseReleased, evShutdown, to{phaseReleased, actNone}},
		"released: done is stale":                         {phaseReleased, evDone, to{phaseReleased, actNone}},
		"released: budgetSpent is stale":                  {phaseReleased, evBudgetSpent, to{phaseReleased, actNone}},
	} {
		t.Run(name, func(t *testing.T) {
			p, a := next(tc.from, tc.event)
			if got := (to{p, a}); got != tc.want {
				t.Fatalf("next(%v, %v) = %v, %v; want %v, %v", tc.from, tc.event, p, a, tc.want.phase, tc.want.action)
			}
		})
	}
}

func TestStringsOfUnknownValues(t *testing.T) {
	for _, s := range []interface{ String() string }{phase(0), event(0), action(0)} {
		if s.String() == "" {
			t.Errorf("%T(0) has no name", s)
		}
	}
}
