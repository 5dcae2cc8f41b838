package archtest

// A rule limits what the packages under From may import from this module.
// Paths are relative to the module ("internal/planner"); a path names the
// package and every package below it.
type rule struct {
	// From is the importing package (and those below it).
	From string
	// Only, when set, lists the module packages From may import (besides
	// itself and those below it); anything else is forbidden.
	Only []string
	// Not lists module packages From must not import.
	Not []string
	// Tests says whether From's _test.go files are held to the rule too.
	Tests bool
	// Why is printed with a violation.
	Why string
}

// rules are the import directions of docs/architecture.md.
var rules = []rule{
	{
		From:  "internal",
		Not:   []string{"internal/cli"},
		Tests: true,
		Why:   "only cmd/podward runs the CLI",
	},
	{
		From:  "internal/model",
		Only:  []string{},
		Tests: true,
		Why:   "the model is the bottom layer: Kubernetes types, decoding, validation",
	},
	{
		From:  "internal/conformance",
		Only:  []string{},
		Tests: true,
		Why:   "the node-conformance report reads the e2e run's files and the node's log, as anyone could: it knows nothing of podward's insides",
	},
	{
		From:  "internal/objects/local",
		Only:  []string{"internal/objects", "internal/model", "internal/store"},
		Tests: true,
		Why:   "the standalone objects are a store of what was applied: the store keeps them (and its tests use it), the agent and the pod worker only read them through objects.Getter",
	},
	{
		From:  "internal/planner",
		Only:  []string{"internal/model"},
		Tests: true,
		Why:   "the planner is pure: spec + observations + now in, a plan out",
	},
	{
		From:  "internal/runtime",
		Not:   []string{"internal/podworker", "internal/agent", "internal/planner", "internal/prober", "internal/store", "internal/apiserver", "internal/staticpods", "internal/cluster", "internal/daemon", "internal/cli", "internal/client"},
		Tests: true,
		Why:   "runtimes implement the contract in internal/runtime; they never know their consumers",
	},
	{
		From:  "internal/runtime/volumes",
		Not:   []string{"internal/runtime/process", "internal/runtime/cri", "internal/runtime/fake"},
		Tests: true,
		Why:   "what a configMap, secret, downwardAPI or projected volume holds is one rule both runtimes call (they keep only where the files go); it knows neither",
	},
	{
		From:  "internal/clusterobjects",
		Only:  []string{"internal/objects", "internal/model"},
		Tests: true,
		Why:   "the node's managers of ConfigMaps, Secrets and tokens implement internal/objects' contract against the API server; internal/daemon wires them to the runtime and the agent",
	},
	{
		From:  "internal/runtime/cgroups",
		Only:  []string{},
		Tests: true,
		Why:   "the cgroup layer is a leaf the shim binary links: no podward package, no Kubernetes one",
	},
	{
		From:  "internal/runtime/capabilities",
		Only:  []string{},
		Tests: true,
		Why:   "the capabilities' names and numbers are a leaf both runtimes' checks read and the shim binary's init helper links",
	},
	{
		From:  "internal/runtime/exitstatus",
		Only:  []string{"internal/crilog"},
		Tests: true,
		Why:   "how an instance ended (reasons, status, the termination message's rule) is a leaf that the runtime contract re-exports and the shim binary links",
	},
	{
		From:  "internal/runtime/hostfs/beneath",
		Only:  []string{},
		Tests: true,
		Why:   "opening a path beneath a directory is a leaf that hostfs and the shim binary's init helper share",
	},
	{
		From:  "internal/runtime/hostfs/mountinfo",
		Only:  []string{},
		Tests: true,
		Why:   "reading a mountinfo file is a leaf that hostfs and the shim binary's init helper share",
	},
	{
		From:  "internal/runtime/seccomp",
		Only:  []string{},
		Tests: true,
		Why:   "the RuntimeDefault seccomp filter is a leaf the shim binary's init helper links: no podward package, no Kubernetes one",
	},
	{
		From:  "internal/runtime/podnet",
		Only:  []string{"internal/model"},
		Tests: true,
		Why:   "the pod's network files (resolv.conf, /etc/hosts, its host name) are pure generators from the pod and the node's settings: both runtimes call them, they call nothing",
	},
	{
		From:  "internal/runtime/process/tcplisten",
		Only:  []string{},
		Tests: true,
		Why:   "which processes own a listening socket is read from /proc alone: a leaf the process runtime's port-forward asks",
	},
	{
		From:  "cmd/podward-shim",
		Only:  []string{"internal/runtime/process/shim", "internal/runtime/process/launch"},
		Tests: true,
		Why:   "the shim binary is the shim and the init helper, nothing else (linkRules checks what they link)",
	},
	{
		From: "internal/daemon",
		Not:  []string{"internal/podworker"},
		Why:  "the daemons' assembly speaks the agent's words (agent.StopReason, agent.Phase), never the pod worker's: the CLI, which imports internal/daemon, so never reaches the worker either",
	},
	{
		From: "internal/cluster",
		Not:  []string{"internal/podworker", "internal/planner"},
		Why:  "cluster mode drives pods through the agent (agent.StopReason, agent.Phase), never the pod worker",
	},
	{
		From: "internal/cli",
		Not:  []string{"internal/podworker", "internal/agent", "internal/store", "internal/runtime", "internal/planner", "internal/prober", "internal/apiserver", "internal/staticpods", "internal/cluster"},
		Why:  "the CLI speaks to the agent through the client; daemons are assembled by internal/daemon",
	},
	{
		From: "internal/client",
		Only: []string{"internal/sockdir", "internal/wire", "internal/timeline"},
		Why:  "the client depends only on the wire types (the Kubernetes API types, podward's own in internal/wire, and the timeline's, a pure leaf) and the socket directory's rules it shares with the server",
	},
	{
		From:  "internal/wire",
		Only:  []string{},
		Tests: true,
		Why:   "podward's own wire types are a leaf that the API server, the client and the node shutdown share",
	},
	{
		From:  "internal/sockdir",
		Only:  []string{},
		Tests: true,
		Why:   "the socket directory's rules are a leaf that the client and the API server share",
	},
	{
		From:  "internal/timeline",
		Only:  []string{},
		Tests: true,
		Why:   "the timeline (its data, its bounded history, its pictures) is a pure leaf that the pod worker, the agent, the API, the client and the CLI share",
	},
	{
		From:  "internal/logind",
		Only:  []string{},
		Tests: true,
		Why:   "the logind watch declares the node shutdown it triggers (Shutdowner); internal/daemon wires it to the shutdown manager",
	},
	{
		From:  "internal/podworker",
		Not:   []string{"internal/agent", "internal/store", "internal/apiserver", "internal/staticpods", "internal/cluster", "internal/daemon", "internal/cli", "internal/client", "internal/runtime/process", "internal/runtime/cri"},
		Why:   "the pod worker knows the runtime contract, not a runtime, and nothing above it",
		Tests: false,
	},
	{
		From: "internal/agent",
		Not:  []string{"internal/apiserver", "internal/staticpods", "internal/cluster", "internal/daemon", "internal/cli", "internal/client", "internal/runtime/process", "internal/runtime/cri"},
		Why:  "the agent is the engine the sources and servers above it drive",
	},
	{
		From:  "internal/shutdown",
		Only:  []string{"internal/wire"},
		Tests: true,
		Why:   "the node shutdown manager drives the agent and the store through the interfaces it declares; its callers (logind, the API) know it, not the reverse",
	},
	{
		From:  "internal/bench",
		Only:  []string{"internal/client"},
		Tests: true,
		Why:   "podward bench measures a real agent from outside, as a client does: through the API and /proc, never the agent's parts",
	},
	{
		From:  "internal/metrics",
		Only:  []string{"internal/model", "internal/podworker", "internal/agent", "internal/shutdown"},
		Tests: true,
		Why:   "the metrics implement the recorders their owners declare (podworker, agent) and read the states they name; only internal/daemon wires them",
	},
	{
		From: "internal/streaming",
		Not:  []string{"internal/podworker", "internal/agent", "internal/store", "internal/apiserver", "internal/staticpods", "internal/cluster", "internal/daemon", "internal/cli", "internal/client", "internal/runtime/process", "internal/runtime/cri"},
		Why:  "the streaming server serves the runtime contract's streams to both servers, which resolve and authorize; it knows the agent only as the Pods it declares",
	},
	{
		From:  "internal/daemon",
		Not:   []string{"internal/cli", "internal/client"},
		Tests: true,
		Why:   "the assembly package wires the daemons; the CLI sits above it",
	},
	{
		From:  "test/internal/ptytest",
		Only:  []string{},
		Tests: true,
		Why:   "the terminal driver of test/e2e and test/cluster drives a client binary on a pty; it knows nothing of podward",
	},
}

// A linkRule limits what a program links: every package in the non-test
// dependencies of Main, transitively (`go list -deps`), the standard
// library aside. A rule on imports cannot see that far: a package of the
// module may itself be allowed and still pull in a Kubernetes library.
type linkRule struct {
	// Main is the program's package, relative to the module.
	Main string
	// Module lists the packages of the module it may link (each with
	// those below it), relative to the module; Main itself always.
	Module []string
	// External lists the import paths outside the module it may link
	// (each with the packages below it).
	External []string
	// Why is printed with a violation.
	Why string
}

// linkRules are the programs whose dependencies are kept small.
var linkRules = []linkRule{
	{
		Main: "cmd/podward-shim",
		Module: []string{
			"internal/runtime/process/shim", "internal/runtime/process/launch", "internal/crilog",
			"internal/runtime/exitstatus", "internal/runtime/hostfs/beneath", "internal/runtime/cgroups",
			"internal/runtime/seccomp", "internal/runtime/capabilities", "internal/runtime/hostfs/mountinfo",
		},
		// moby's default seccomp profile, as Go data, and the OCI types it
		// is written in (pure Go, no cgo): internal/runtime/seccomp's.
		External: []string{"golang.org/x/sys", "github.com/moby/profiles/seccomp", "github.com/opencontainers/runtime-spec/specs-go"},
		Why: "one shim runs for every container and one init helper for every exec: the shim binary links no Kubernetes package (nor prometheus, cobra, bbolt, ...), " +
			"whose initialisation and memory each of them would pay (docs/architecture.md, issue 14's 1 MB per container)",
	},
}

// A makerRule keeps the making of a type's values to its own package: no
// other package (nor its tests) writes a composite literal of Type (or of
// a slice, array or map of it), and the Values — the constants that say
// what such a value is — are only compared against elsewhere (== or !=, a
// switch case), never used to set one.
type makerRule struct {
	// Pkg is the package that declares Type, relative to the module; it
	// and those below it may make values.
	Pkg    string
	Type   string
	Values []string
	// Why is printed with a violation.
	Why string
}

// makerRules are the types only their package makes.
var makerRules = []makerRule{
	{
		Pkg:    "internal/planner",
		Type:   "Action",
		Values: []string{"Start", "Stop", "Kill"},
		Why: "every Start, Stop and Kill comes out of the planner's Next (issue 24): the pod worker records facts " +
			"in planner.Observed and carries the plan out; a stop decided elsewhere is a rule outside the planner",
	},
}
