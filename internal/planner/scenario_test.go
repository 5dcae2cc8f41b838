package planner_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/planner/plannertest"
)

// TestScenarios runs the rules of docs/lifecycle.md written as scenarios in
// testdata/*.txt (format: testdata/README.md). Within a file the scenario a
// pod directive starts carries on to the following blocks until the next
// pod directive. Rewrite the expected outputs with
// go test ./internal/planner -run TestScenarios -rewrite.
func TestScenarios(t *testing.T) {
	plannertest.Run(t, "testdata/*.txt", func() func(*plannertest.Block) (string, error) {
		var s plannertest.Scenario
		return func(b *plannertest.Block) (string, error) {
			var out []string
			for _, d := range b.Directives {
				if ok, err := s.Apply(d); ok {
					if err != nil {
						return "", err
					}
					continue
				}
				if s.Pod == nil {
					return "", d.Errorf("no pod yet")
				}
				got, err := query(&s, d)
				if err != nil {
					return "", err
				}
				out = append(out, got)
			}
			return strings.Join(out, "\n"), nil
		}
	})
}

// query carries out a directive that asks the planner something:
//
//	plan now=T                the plan planner.Next makes at T
//	begin now=T grace=D       planner.Begin; the termination is kept for what follows
//	shorten now=T grace=D     Termination.Shorten of the kept termination
//	phase [terminated]        planner.Phase
//	initsdone                 planner.InitsDone
//	retryfits NAME            Termination.RetryFits for container NAME
func query(s *plannertest.Scenario, d plannertest.Directive) (string, error) {
	switch d.Cmd {
	case "plan":
		now, err := d.Time("now")
		if err != nil {
			return "", err
		}
		return plannertest.RenderPlan(planner.Next(s.Input(now))), nil
	case "begin", "shorten":
		now, err := d.Time("now")
		if err != nil {
			return "", err
		}
		grace, err := d.Duration("grace")
		if err != nil {
			return "", err
		}
		if d.Cmd == "begin" {
			t := planner.Begin(s.Pod, s.Containers, now, grace)
			s.Termination = &t
			return plannertest.RenderTermination(t), nil
		}
		if s.Termination == nil {
			return "", d.Errorf("no termination to shorten")
		}
		shortened := s.Termination.Shorten(now, grace)
		return "Shortened " + strconv.FormatBool(shortened) + "\n" + plannertest.RenderTermination(*s.Termination), nil
	case "phase":
		return "Phase " + string(planner.Phase(s.Pod, s.Containers, d.Has("terminated"))), nil
	case "initsdone":
		return "InitsDone " + strconv.FormatBool(planner.InitsDone(s.Pod, s.Containers)), nil
	case "retryfits":
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return "", d.Errorf("want retryfits NAME")
		}
		if s.Termination == nil {
			return "", d.Errorf("no termination")
		}
		name := d.Args[0].Key
		return "RetryFits " + name + " " + strconv.FormatBool(s.Termination.RetryFits(s.Config, s.Containers[name])), nil
	}
	return "", d.Errorf("unknown directive")
}
