// Package archtest keeps the import directions that docs/architecture.md
// draws: its test reads every Go file of the module and fails when a package
// imports across a forbidden direction, and when a package makes values of a
// type another package keeps to itself (makerRules: only the planner makes a
// planner.Action, a Start, Stop or Kill). Two rules of shape hold too: no
// function of internal/'s code is over 80 lines, and nothing calls the time
// package's Sleep (shape_test.go). It has no code of its own; the import
// and maker rules are data (rules.go), so that a new package or a new rule
// is one line.
package archtest
