package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ShimBinaryName is the name of the shim binary (cmd/podward-shim), which
// the Runtime looks for beside the agent's executable and in PATH when
// Config.ShimBinary does not name one.
const ShimBinaryName = "podward-shim"

// shimBinary is the binary the Runtime runs as the shims, the spare shims
// and the init helper of each Exec, as Config.ShimBinary says: that path,
// which must be an executable file; else the first of ShimBinaryName
// beside exe (this process's executable, "" when unknown) and in PATH;
// else "", which is this very binary (/proc/self/exe), re-executed as
// before the shim binary existed. fallback says that no shim binary was
// found, for New's warning.
func shimBinary(configured, exe string) (bin string, fallback bool, err error) {
	if configured != "" {
		abs, err := filepath.Abs(configured)
		if err != nil {
			return "", false, fmt.Errorf("shim binary %q: %w", configured, err)
		}
		if err := checkExecutable(abs); err != nil {
			return "", false, fmt.Errorf("shim binary: %w", err)
		}
		return abs, false, nil
	}
	if exe != "" {
		beside := filepath.Join(filepath.Dir(exe), ShimBinaryName)
		if checkExecutable(beside) == nil {
			return beside, false, nil
		}
	}
	if found, err := exec.LookPath(ShimBinaryName); err == nil {
		if abs, err := filepath.Abs(found); err == nil {
			return abs, false, nil
		}
	}
	return "", true, nil
}

// checkExecutable fails unless path is a regular file that someone may
// execute.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}
