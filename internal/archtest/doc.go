// Package archtest keeps the import directions that docs/architecture.md
// draws: its test reads every Go file of the module and fails when a package
// imports across a forbidden direction, and when a package makes values of a
// type another package keeps to itself (makerRules: only the planner makes a
// planner.Action, a Start, Stop or Kill). It has no code of its own; the
// rules are data (rules.go), so that a new package or a new rule is one line.
package archtest
