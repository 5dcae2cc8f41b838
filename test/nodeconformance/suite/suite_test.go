//go:build ignore

// This file is not part of podward's module (hence the ignore constraint):
// hack/e2e-build.sh copies it, without that line, into the scratch module
// that requires k8s.io/kubernetes at the control plane's version, and builds
// it there with `go test -c` into the e2e binary of `make node-conformance`.
//
// It is Kubernetes' e2e suite (package k8s.io/kubernetes/test/e2e: its
// suite set-up, flags and RunE2ETests) with only the test packages that
// hold [NodeConformance] specs linked in: test/e2e/common (node, storage,
// network) and test/e2e/apps. `grep -rl NodeConformance test/e2e` finds no
// other test package, so for the focus \[NodeConformance\] this binary
// lists the same specs as the whole e2e.test, and builds in a fraction of
// its time (most of test/e2e's packages are not compiled at all).
package nodeconformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"

	"k8s.io/component-base/version"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	"k8s.io/kubernetes/test/e2e/invariants/logcheck"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// the feature and label constants the specs use, defined before they register
	_ "k8s.io/kubernetes/test/e2e/feature"

	// the specs: only the packages with [NodeConformance] ones
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/common"

	// the framework's optional parts the full e2e.test links in too
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

// ginkgo's runner looks for a test package that imports it
var _ = ginkgo.It

func TestMain(m *testing.M) {
	showVersion := flag.Bool("version", false, "print the version of Kubernetes this suite is built from, and exit")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	logcheck.RegisterFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %q\n", flag.Args())
		os.Exit(2)
	}
	// the manifests and fixtures some specs read, compiled in
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	if framework.TestContext.RepoRoot != "" {
		testfiles.AddFileSource(testfiles.RootFileSource{Root: framework.TestContext.RepoRoot})
	}
	os.Exit(m.Run())
}

func TestNodeConformance(t *testing.T) {
	e2e.RunE2ETests(t)
}
